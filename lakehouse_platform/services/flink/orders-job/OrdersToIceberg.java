package lakehouse.jobs;

import java.lang.reflect.Method;
import java.math.BigDecimal;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;

import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.connector.source.util.ratelimit.RateLimiterStrategy;
import org.apache.flink.api.java.typeutils.RowTypeInfo;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.connector.datagen.source.DataGeneratorSource;
import org.apache.flink.connector.datagen.source.GeneratorFunction;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;
import org.apache.flink.types.Row;

/**
 * The platform's streaming writer: orders (a checkpointed generator, or the Kafka topic of JSON orders)
 * INSERTed into an Iceberg table through a REST catalog. Iceberg's Flink sink commits once per completed
 * checkpoint, and each snapshot's summary carries flink.job-id and flink.max-committed-checkpoint-id.
 *
 * <p>Built by lakehouse_platform/services/flink.py with javac against the distribution's jars (no Maven). It uses only
 * APIs that Flink 1.20 and 2.x share, because on aws the same classes run on Managed Service for Apache
 * Flink's FLINK-1_20 runtime. Credentials are never arguments: S3FileIO takes them from the AWS default
 * chain (the job and task managers' environment, or the application's IAM role).
 *
 * <p>Arguments ({@code --key value}; on Managed Service for Apache Flink, the same keys in the runtime
 * property group {@value #PROPERTY_GROUP}):
 * <pre>
 *   --catalog-uri URI --warehouse WH [--s3-endpoint URL] [--region R] --table ns.name
 *   [--checkpoint-interval 10s] [--checkpoint-dir file:///...] [--job-name NAME]
 *   [--source generator|kafka] [--rows-per-second 20]
 *   [--kafka-bootstrap HOST:PORT --kafka-topic orders --kafka-group G]
 *   [--catalog.KEY VALUE]...      extra Iceberg REST client properties (no secrets)
 *   [--catalog-env.KEY ENVVAR]... a client property read from the job manager's environment
 *   [--catalog-secret.KEY TEMPLATE]... a client property whose {secretsmanager:ARN} parts are read from
 *                                 AWS Secrets Manager when the job starts (on aws: no environment to use)
 *   [--kafka.KEY VALUE]...        extra Kafka consumer properties (e.g. MSK's IAM authentication)
 * </pre>
 */
public final class OrdersToIceberg {

    static final String PROPERTY_GROUP = "lakehouse.job";
    static final String[] FIELDS = {"order_id", "customer_id", "book_isbn", "quantity", "unit_price", "status",
        "order_ts"};
    static final String[] STATUSES = {"placed", "paid", "paid", "shipped", "shipped", "delivered", "cancelled"};

    private OrdersToIceberg() {}

    /** Order number i becomes the same order every time (splitmix64 hashing, no random state to checkpoint). */
    public static final class Orders implements GeneratorFunction<Long, Row> {
        private static final long serialVersionUID = 1L;

        static long mix(long z) {
            z = (z ^ (z >>> 30)) * 0xbf58476d1ce4e5b9L;
            z = (z ^ (z >>> 27)) * 0x94d049bb133111ebL;
            return z ^ (z >>> 31);
        }

        /** A valid ISBN-13 (978 prefix, check digit computed) for one of 1200 books. */
        static String isbn(long book) {
            String body = "978" + String.format("%09d", 100000000L + book * 7919L % 900000000L);
            int sum = 0;
            for (int i = 0; i < 12; i++) {
                sum += (body.charAt(i) - '0') * (i % 2 == 0 ? 1 : 3);
            }
            return body + ((10 - sum % 10) % 10);
        }

        @Override
        public Row map(Long i) {
            long h = mix(i + 42);
            return Row.of(
                    i,
                    (int) Math.floorMod(h, 5000L) + 1,
                    isbn(Math.floorMod(mix(h), 1200L) + 1),
                    (int) Math.floorMod(mix(h + 1), 3L) + 1,
                    BigDecimal.valueOf(500 + Math.floorMod(mix(h + 2), 4500L), 2),
                    STATUSES[(int) Math.floorMod(mix(h + 3), (long) STATUSES.length)],
                    LocalDateTime.now(ZoneOffset.UTC).truncatedTo(ChronoUnit.MICROS));
        }
    }

    /** {@code --key value} pairs, in order; on Managed Service for Apache Flink, its runtime properties. */
    static Map<String, String> arguments(String[] args) throws Exception {
        Map<String, String> parsed = new LinkedHashMap<>();
        if (args.length == 0) {
            return managedServiceProperties();
        }
        for (int i = 0; i < args.length; i++) {
            if (!args[i].startsWith("--") || i + 1 >= args.length) {
                throw new IllegalArgumentException("expected --key value pairs, got " + String.join(" ", args));
            }
            parsed.put(args[i].substring(2), args[++i]);
        }
        return parsed;
    }

    /** The runtime properties Managed Service for Apache Flink hands the application (by reflection: only there). */
    @SuppressWarnings("unchecked")
    static Map<String, String> managedServiceProperties() throws Exception {
        Class<?> runtime = Class.forName("com.amazonaws.services.kinesisanalytics.runtime.KinesisAnalyticsRuntime");
        Method get = runtime.getMethod("getApplicationProperties");
        Map<String, Properties> groups = (Map<String, Properties>) get.invoke(null);
        Properties group = groups.get(PROPERTY_GROUP);
        if (group == null) {
            throw new IllegalArgumentException("no arguments and no runtime property group " + PROPERTY_GROUP);
        }
        Map<String, String> parsed = new LinkedHashMap<>();
        for (String key : group.stringPropertyNames()) {
            parsed.put(key, group.getProperty(key));
        }
        return parsed;
    }

    static String required(Map<String, String> p, String key) {
        String value = p.get(key);
        if (value == null || value.isEmpty()) {
            throw new IllegalArgumentException("missing --" + key);
        }
        return value;
    }

    static String q(String s) {
        return s.replace("'", "''");
    }

    /** {@code template} with every {@code {secretsmanager:ARN}} replaced by that secret's string (AWS SDK v2,
     * by reflection: the SDK is on the classpath only where the job runs on aws). */
    static String resolveSecrets(String template) throws Exception {
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("\\{secretsmanager:([^}]+)}").matcher(template);
        StringBuilder out = new StringBuilder();
        Object client = null;
        while (m.find()) {
            if (client == null) {
                client = Class.forName("software.amazon.awssdk.services.secretsmanager.SecretsManagerClient")
                        .getMethod("create").invoke(null);
            }
            Class<?> requestClass = Class.forName(
                    "software.amazon.awssdk.services.secretsmanager.model.GetSecretValueRequest");
            Object builder = requestClass.getMethod("builder").invoke(null);
            Method secretId = builder.getClass().getMethod("secretId", String.class);
            secretId.setAccessible(true);
            secretId.invoke(builder, m.group(1));
            Method build = builder.getClass().getMethod("build");
            build.setAccessible(true);
            Object request = build.invoke(builder);
            Object response = client.getClass().getMethod("getSecretValue", requestClass).invoke(client, request);
            Method secretString = response.getClass().getMethod("secretString");
            m.appendReplacement(out, java.util.regex.Matcher.quoteReplacement((String) secretString.invoke(response)));
        }
        m.appendTail(out);
        return out.toString();
    }

    /** {@code --kafka.KEY VALUE} as the Kafka table's {@code 'properties.KEY'} options. */
    static String kafkaProperties(Map<String, String> p) {
        StringBuilder out = new StringBuilder();
        for (Map.Entry<String, String> e : p.entrySet()) {
            if (e.getKey().startsWith("kafka.")) {
                out.append(", 'properties.").append(q(e.getKey().substring(6))).append("' = '")
                        .append(q(e.getValue())).append("'");
            }
        }
        return out.toString();
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> p = arguments(args);
        String table = required(p, "table");
        String jobName = p.getOrDefault("job-name", "lakehouse-orders-stream");
        String source = p.getOrDefault("source", "generator");
        String namespace = table.substring(0, table.lastIndexOf('.'));

        Configuration conf = new Configuration();
        conf.setString("execution.checkpointing.interval", p.getOrDefault("checkpoint-interval", "10s"));
        conf.setString("execution.checkpointing.mode", "EXACTLY_ONCE");
        if (p.containsKey("checkpoint-dir")) {
            // One directory per lineage (job name + table + source): a redeploy restores only its own state.
            // (Managed Service for Apache Flink keeps checkpoints itself: no directory there.)
            conf.setString("execution.checkpointing.dir", p.get("checkpoint-dir"));
            conf.setString("execution.checkpointing.externalized-checkpoint-retention", "RETAIN_ON_CANCELLATION");
        }
        conf.setString("pipeline.name", jobName);
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(conf);
        StreamTableEnvironment tEnv = StreamTableEnvironment.create(env);
        tEnv.getConfig().set("pipeline.name", jobName);
        tEnv.getConfig().set("table.local-time-zone", "UTC");

        List<String> props = new ArrayList<>(List.of(
                "'type' = 'iceberg'", "'catalog-type' = 'rest'",
                "'uri' = '" + q(required(p, "catalog-uri")) + "'",
                "'warehouse' = '" + q(required(p, "warehouse")) + "'",
                "'io-impl' = 'org.apache.iceberg.aws.s3.S3FileIO'",
                "'client.region' = '" + q(p.getOrDefault("region", "us-east-1")) + "'"));
        String endpoint = p.getOrDefault("s3-endpoint", "");
        if (!endpoint.isEmpty()) {
            props.add("'s3.endpoint' = '" + q(endpoint) + "'");
            props.add("'s3.path-style-access' = 'true'");
        }
        for (Map.Entry<String, String> e : p.entrySet()) {
            if (e.getKey().startsWith("catalog.")) {
                props.add("'" + q(e.getKey().substring(8)) + "' = '" + q(e.getValue()) + "'");
            } else if (e.getKey().startsWith("catalog-env.")) {
                String value = System.getenv(e.getValue());
                if (value == null) {
                    throw new IllegalArgumentException("environment variable " + e.getValue() + " is not set");
                }
                props.add("'" + q(e.getKey().substring(12)) + "' = '" + q(value) + "'");
            } else if (e.getKey().startsWith("catalog-secret.")) {
                props.add("'" + q(e.getKey().substring(15)) + "' = '" + q(resolveSecrets(e.getValue())) + "'");
            }
        }
        tEnv.executeSql("CREATE CATALOG lake WITH (" + String.join(", ", props) + ")");
        tEnv.executeSql("CREATE DATABASE IF NOT EXISTS lake." + namespace);
        tEnv.executeSql("CREATE TABLE IF NOT EXISTS lake." + table + " ("
                + " order_id BIGINT NOT NULL, customer_id INT, book_isbn STRING, quantity INT,"
                + " unit_price DECIMAL(10, 2), status STRING, order_ts TIMESTAMP(6)"
                // A streaming writer sharing its table with batch writers retries conflicting commits more
                // than Iceberg's default 4 before the task fails (and the job restores and commits again).
                + ") WITH ('format-version' = '2', 'commit.retry.num-retries' = '10')");

        if (source.equals("kafka")) {
            // Every field read as text and cast: producers write numbers or strings, ISO or SQL timestamps,
            // or epoch milliseconds; a field that does not parse becomes NULL instead of failing the job.
            tEnv.executeSql("CREATE TEMPORARY TABLE orders_src ("
                    + " order_id STRING, customer_id STRING, book_isbn STRING, quantity STRING,"
                    + " unit_price STRING, status STRING, order_ts STRING"
                    + ") WITH ('connector' = 'kafka', 'topic' = '" + q(p.getOrDefault("kafka-topic", "orders")) + "',"
                    + " 'properties.bootstrap.servers' = '" + q(required(p, "kafka-bootstrap")) + "',"
                    + " 'properties.group.id' = '" + q(p.getOrDefault("kafka-group", "lakehouse-flink")) + "',"
                    + " 'scan.startup.mode' = 'group-offsets', 'properties.auto.offset.reset' = 'earliest',"
                    + " 'format' = 'json', 'json.ignore-parse-errors' = 'true'" + kafkaProperties(p) + ")");
            tEnv.executeSql("CREATE TEMPORARY VIEW orders_typed AS SELECT"
                    + " TRY_CAST(order_id AS BIGINT) AS order_id, TRY_CAST(customer_id AS INT) AS customer_id,"
                    + " book_isbn, TRY_CAST(quantity AS INT) AS quantity,"
                    + " TRY_CAST(unit_price AS DECIMAL(10, 2)) AS unit_price, status,"
                    + " CASE WHEN REGEXP(order_ts, '^[0-9]+$')"
                    + "   THEN CAST(TO_TIMESTAMP_LTZ(TRY_CAST(order_ts AS BIGINT), 3) AS TIMESTAMP(6))"
                    + "   ELSE TRY_CAST(REPLACE(REGEXP_REPLACE(order_ts, '(Z|[+-][0-9][0-9]:?[0-9][0-9])$', ''),"
                    + "     'T', ' ') AS TIMESTAMP(6)) END AS order_ts"
                    + " FROM orders_src");
        } else {
            long rate = Long.parseLong(p.getOrDefault("rows-per-second", "20"));
            DataGeneratorSource<Row> generator = new DataGeneratorSource<>(new Orders(), Long.MAX_VALUE,
                    RateLimiterStrategy.perSecond(rate),
                    new RowTypeInfo(new TypeInformation<?>[] {Types.LONG, Types.INT, Types.STRING, Types.INT,
                        Types.BIG_DEC, Types.STRING, Types.LOCAL_DATE_TIME}, FIELDS));
            DataStream<Row> orders = env.fromSource(generator, WatermarkStrategy.noWatermarks(), "orders-generator")
                    .uid("orders-generator");
            tEnv.createTemporaryView("orders_typed", orders);
        }
        tEnv.executeSql("INSERT INTO lake." + table + " SELECT order_id, customer_id, book_isbn, quantity,"
                + " CAST(unit_price AS DECIMAL(10, 2)), status, CAST(order_ts AS TIMESTAMP(6))"
                + " FROM orders_typed WHERE order_id IS NOT NULL");
    }
}
