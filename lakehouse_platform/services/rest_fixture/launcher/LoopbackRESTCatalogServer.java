package org.apache.iceberg.rest;

import java.lang.reflect.Method;
import java.net.InetSocketAddress;
import java.util.Map;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.handler.gzip.GzipHandler;
import org.eclipse.jetty.servlet.ServletContextHandler;
import org.eclipse.jetty.servlet.ServletHolder;

/** RESTCatalogServer bound to rest.host:rest.port (default 127.0.0.1:8181); compiled by lakehouse_platform/services/rest_fixture.py. */
public final class LoopbackRESTCatalogServer {
  private LoopbackRESTCatalogServer() {}

  public static void main(String[] args) throws Exception {
    Method init = RESTCatalogServer.class.getDeclaredMethod("initializeBackendCatalog");
    init.setAccessible(true);
    RESTCatalogServer.CatalogContext context = (RESTCatalogServer.CatalogContext) init.invoke(new RESTCatalogServer());
    Map<String, String> conf = context.configuration();
    String host = conf.getOrDefault("rest.host", "127.0.0.1");
    int port = Integer.parseInt(conf.getOrDefault("rest.port", "8181"));
    ServletContextHandler handler = new ServletContextHandler(ServletContextHandler.NO_SESSIONS);
    handler.addServlet(new ServletHolder(new RESTCatalogServlet(new RESTServerCatalogAdapter(context))), "/*");
    handler.insertHandler(new GzipHandler());
    Server server = new Server(new InetSocketAddress(host, port));
    server.setHandler(handler);
    server.setStopAtShutdown(true);
    server.start();
    server.join();
  }
}
