/*
 * A Kafka ConfigProvider reading AWS Secrets Manager: the platform's own, for MSK Connect.
 *
 * MSK Connect resolves ${provider:path:key} references in connector configs through providers the
 * worker configuration names, and a provider must ship inside the connector's custom plugin. The
 * one AWS documents (aws-samples/msk-config-providers) is not on Maven Central, so the platform
 * compiles this one (`make artifacts`), against kafka-clients and the AWS SDK from jar locks.
 *
 * Reference form: ${secretsmanager:<secret name>:<key>} -- the secret's *name* (an ARN holds ':',
 * which Kafka's reference pattern cannot carry). A JSON object secret yields its fields; a plain
 * string secret yields itself under the key "value".
 *
 * Worker configuration:
 *   config.providers=secretsmanager
 *   config.providers.secretsmanager.class=lakehouse.connect.SecretsManagerConfigProvider
 *   config.providers.secretsmanager.param.region=<region>
 */
package lakehouse.connect;

import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import org.apache.kafka.common.config.ConfigData;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.common.config.provider.ConfigProvider;
import software.amazon.awssdk.http.urlconnection.UrlConnectionHttpClient;
import software.amazon.awssdk.protocols.jsoncore.JsonNode;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.secretsmanager.SecretsManagerClient;
import software.amazon.awssdk.services.secretsmanager.model.GetSecretValueRequest;

public final class SecretsManagerConfigProvider implements ConfigProvider {
  public static final String REGION = "region";
  public static final String PLAIN_KEY = "value";

  private SecretsManagerClient client;

  @Override
  public void configure(Map<String, ?> configs) {
    Object region = configs.get(REGION);
    var builder = SecretsManagerClient.builder().httpClient(UrlConnectionHttpClient.create());
    if (region != null && !region.toString().isEmpty()) {
      builder.region(Region.of(region.toString()));
    }
    client = builder.build();
  }

  /** Every field of the secret (a plain string secret: one field, "value"). */
  @Override
  public ConfigData get(String path) {
    return new ConfigData(fields(path));
  }

  @Override
  public ConfigData get(String path, Set<String> keys) {
    Map<String, String> all = fields(path);
    Map<String, String> wanted = new HashMap<>();
    for (String key : keys) {
      if (!all.containsKey(key)) {
        throw new ConfigException("secret " + path + " has no key " + key + " (has: " + all.keySet() + ")");
      }
      wanted.put(key, all.get(key));
    }
    return new ConfigData(wanted);
  }

  private Map<String, String> fields(String path) {
    if (path == null || path.isEmpty()) {
      return new HashMap<>();
    }
    String value = client.getSecretValue(GetSecretValueRequest.builder().secretId(path).build()).secretString();
    Map<String, String> out = new HashMap<>();
    if (value != null && value.trim().startsWith("{")) {
      JsonNode node = JsonNode.parser().parse(value);
      for (Map.Entry<String, JsonNode> field : node.asObject().entrySet()) {
        JsonNode v = field.getValue();
        out.put(field.getKey(), v.isString() ? v.asString() : v.toString());
      }
    } else {
      out.put(PLAIN_KEY, value);
    }
    return out;
  }

  @Override
  public void close() {
    if (client != null) {
      client.close();
    }
  }
}
