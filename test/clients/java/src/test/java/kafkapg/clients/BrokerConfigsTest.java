package kafkapg.clients;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.AlterConfigsOptions;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.DescribeConfigsOptions;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.InvalidConfigurationException;
import org.apache.kafka.common.errors.InvalidRequestException;
import org.junit.jupiter.api.Test;

/**
 * Admin.incrementalAlterConfigs and describeConfigs of the BROKER resource, as a single-node Apache
 * Kafka 4.4 answers them: a per-broker dynamic config is set (described as DYNAMIC_BROKER_CONFIG over
 * its default) and deleted, validateOnly changes nothing, a list config is appended to and subtracted
 * from, a read-only config is refused with InvalidRequestException, an invalid value too, and APPEND
 * to a non-list config with InvalidConfigurationException. Kafka applies a change a moment after it
 * answers, so the describes are polled.
 */
class BrokerConfigsTest {

    private static <T> T get(KafkaFuture<T> f) throws Exception {
        return f.get(30, TimeUnit.SECONDS);
    }

    private static Throwable cause(KafkaFuture<?> f) {
        ExecutionException e = assertThrows(ExecutionException.class, () -> get(f));
        return e.getCause();
    }

    private static ConfigEntry await(Admin admin, ConfigResource r, String key, Predicate<ConfigEntry> ok)
            throws Exception {
        ConfigEntry e = null;
        for (int i = 0; i < 50; i++) {
            e = get(admin.describeConfigs(List.of(r), new DescribeConfigsOptions().includeSynonyms(true)).all())
                    .get(r).get(key);
            if (e != null && ok.test(e)) {
                return e;
            }
            Thread.sleep(200);
        }
        throw new AssertionError(key + " never as expected: " + e);
    }

    private static Map<ConfigResource, java.util.Collection<AlterConfigOp>> op(ConfigResource r, String key,
            String value, AlterConfigOp.OpType type) {
        return Map.of(r, List.of(new AlterConfigOp(new ConfigEntry(key, value), type)));
    }

    @Test
    void dynamic_broker_configs_are_set_described_and_deleted() throws Exception {
        try (Admin admin = Kit.admin()) {
            int node = get(admin.describeCluster().nodes()).iterator().next().id();
            ConfigResource broker = new ConfigResource(ConfigResource.Type.BROKER, Integer.toString(node));

            get(admin.incrementalAlterConfigs(op(broker, "background.threads", "7", AlterConfigOp.OpType.SET),
                    new AlterConfigsOptions().validateOnly(true)).all());
            Thread.sleep(1000);
            ConfigEntry e = await(admin, broker, "background.threads", x -> true);
            assertEquals(ConfigEntry.ConfigSource.DEFAULT_CONFIG, e.source(), "validateOnly changed nothing: " + e);

            get(admin.incrementalAlterConfigs(op(broker, "background.threads", "9", AlterConfigOp.OpType.SET)).all());
            e = await(admin, broker, "background.threads", x -> "9".equals(x.value())
                    && x.source() == ConfigEntry.ConfigSource.DYNAMIC_BROKER_CONFIG && x.synonyms().size() == 2);
            assertEquals(ConfigEntry.ConfigSource.DYNAMIC_BROKER_CONFIG, e.source());
            assertFalse(e.isReadOnly());
            assertEquals(2, e.synonyms().size(), "synonyms " + e.synonyms());
            assertEquals("10", e.synonyms().get(1).value());
            assertEquals(ConfigEntry.ConfigSource.DEFAULT_CONFIG, e.synonyms().get(1).source());
            get(admin.incrementalAlterConfigs(op(broker, "background.threads", null, AlterConfigOp.OpType.DELETE)).all());
            await(admin, broker, "background.threads",
                    x -> x.source() == ConfigEntry.ConfigSource.DEFAULT_CONFIG && "10".equals(x.value()));

            get(admin.incrementalAlterConfigs(op(broker, "log.cleanup.policy", "compact", AlterConfigOp.OpType.APPEND)).all());
            await(admin, broker, "log.cleanup.policy", x -> "delete,compact".equals(x.value())
                    && x.source() == ConfigEntry.ConfigSource.DYNAMIC_BROKER_CONFIG);
            get(admin.incrementalAlterConfigs(op(broker, "log.cleanup.policy", "compact", AlterConfigOp.OpType.SUBTRACT)).all());
            await(admin, broker, "log.cleanup.policy", x -> "delete".equals(x.value())
                    && x.source() == ConfigEntry.ConfigSource.DYNAMIC_BROKER_CONFIG);
            get(admin.incrementalAlterConfigs(op(broker, "log.cleanup.policy", null, AlterConfigOp.OpType.DELETE)).all());
            await(admin, broker, "log.cleanup.policy", x -> x.source() == ConfigEntry.ConfigSource.DEFAULT_CONFIG
                    && "delete".equals(x.value()));

            Throwable t = cause(admin.incrementalAlterConfigs(op(broker, "node.id", "5", AlterConfigOp.OpType.SET)).all());
            assertInstanceOf(InvalidRequestException.class, t);
            assertEquals("Cannot update these configs dynamically: [node.id]", t.getMessage());
            t = cause(admin.incrementalAlterConfigs(op(broker, "background.threads", "0", AlterConfigOp.OpType.SET)).all());
            assertInstanceOf(InvalidRequestException.class, t);
            assertTrue(t.getMessage().contains("Value must be at least 1"), t.getMessage());
            t = cause(admin.incrementalAlterConfigs(op(broker, "background.threads", "5", AlterConfigOp.OpType.APPEND)).all());
            assertInstanceOf(InvalidConfigurationException.class, t);
        }
    }
}
