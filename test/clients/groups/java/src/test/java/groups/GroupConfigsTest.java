package groups;

import static org.junit.jupiter.api.Assertions.*;

import java.io.*;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.*;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.InvalidConfigurationException;
import org.apache.kafka.common.errors.InvalidRequestException;
import org.junit.jupiter.api.Test;

/**
 * Group configs (KIP-848, config resource type GROUP = 32) with the Java admin client:
 * DescribeConfigs and IncrementalAlterConfigs, for a group that does not exist yet too, validated
 * against the broker's bounds, and applied by the coordinator to consumer-protocol members (the
 * heartbeat interval it hands out, the session timeout it expires them by).
 *
 * The values used fit Kafka's default bounds (group.consumer.min/max.session.timeout.ms 45000 and
 * 60000, group.consumer.min/max.heartbeat.interval.ms 5000 and 15000) and lowered ones alike
 * (GROUPS_CONSUMER_SESSION_MS, the broker's group.consumer.session.timeout.ms, at most 55000).
 */
class GroupConfigsTest {
    static final String SESSION = "consumer.session.timeout.ms";
    static final String HEARTBEAT = "consumer.heartbeat.interval.ms";

    static Map<String, ConfigEntry> describe(Admin a, String group) throws Exception {
        var r = new ConfigResource(ConfigResource.Type.GROUP, group);
        Config c = a.describeConfigs(List.of(r)).all().get(30, TimeUnit.SECONDS).get(r);
        Map<String, ConfigEntry> out = new TreeMap<>();
        for (var e : c.entries()) out.put(e.name(), e);
        return out;
    }

    static void alter(Admin a, String group, Map<String, String> set, List<String> delete) throws Exception {
        var r = new ConfigResource(ConfigResource.Type.GROUP, group);
        List<AlterConfigOp> ops = new ArrayList<>();
        set.forEach((k, v) -> ops.add(new AlterConfigOp(new ConfigEntry(k, v), AlterConfigOp.OpType.SET)));
        for (var k : delete) ops.add(new AlterConfigOp(new ConfigEntry(k, ""), AlterConfigOp.OpType.DELETE));
        a.incrementalAlterConfigs(Map.of(r, ops)).all().get(30, TimeUnit.SECONDS);
    }

    @Test
    void describe_a_group_that_does_not_exist_yet() throws Exception {
        try (Admin a = Kit.admin()) {
            var d = describe(a, "grp-cfg-none-" + Kit.RUN);
            d.values().forEach(e -> System.out.printf("group config %s = %s (%s%s)%n", e.name(), e.value(),
                e.source(), e.isReadOnly() ? ", read-only" : ""));
            assertTrue(d.containsKey(SESSION) && d.containsKey(HEARTBEAT), "consumer configs: " + d.keySet());
            assertNotEquals(ConfigEntry.ConfigSource.DYNAMIC_GROUP_CONFIG, d.get(SESSION).source());
            assertNotEquals(ConfigEntry.ConfigSource.DYNAMIC_GROUP_CONFIG, d.get(HEARTBEAT).source());
        }
    }

    @Test
    void alter_describe_and_delete() throws Exception {
        String group = "grp-cfg-alter-" + Kit.RUN;
        try (Admin a = Kit.admin()) {
            String session = describe(a, group).get(SESSION).value();
            alter(a, group, Map.of(HEARTBEAT, "5000"), List.of());
            var d = describe(a, group);
            assertEquals("5000", d.get(HEARTBEAT).value());
            assertEquals(ConfigEntry.ConfigSource.DYNAMIC_GROUP_CONFIG, d.get(HEARTBEAT).source());
            assertEquals(session, d.get(SESSION).value(), "the other config stays at its default");
            alter(a, group, Map.of(SESSION, "50000", HEARTBEAT, "7000"), List.of());
            d = describe(a, group);
            assertEquals("50000", d.get(SESSION).value());
            assertEquals("7000", d.get(HEARTBEAT).value());
            // the session must stay longer than the heartbeat interval, the broker's default included
            alter(a, group, Map.of(), List.of(HEARTBEAT));
            d = describe(a, group);
            assertNotEquals(ConfigEntry.ConfigSource.DYNAMIC_GROUP_CONFIG, d.get(HEARTBEAT).source(),
                "deleted: " + d.get(HEARTBEAT));
        }
    }

    @Test
    void values_outside_the_broker_bounds_are_refused() throws Exception {
        String group = "grp-cfg-bounds-" + Kit.RUN;
        try (Admin a = Kit.admin()) {
            for (var bad : List.of(Map.of(SESSION, "999"), Map.of(HEARTBEAT, "999999"),
                                   Map.of(SESSION, "abc"), Map.of("no.such.config", "1"),
                                   Map.of(SESSION, "50000", HEARTBEAT, "50000"))) {
                var e = assertThrows(ExecutionException.class, () -> alter(a, group, bad, List.of()), bad.toString());
                System.out.printf("alter %s: %s%n", bad, e.getCause());
                assertTrue(e.getCause() instanceof InvalidConfigurationException
                           || e.getCause() instanceof InvalidRequestException, bad + ": " + e.getCause());
            }
            assertNotEquals(ConfigEntry.ConfigSource.DYNAMIC_GROUP_CONFIG, describe(a, group).get(SESSION).source(),
                "nothing was stored");
        }
    }

    static double heartbeats(KafkaConsumer<?, ?> c) {
        return c.metrics().entrySet().stream()
            .filter(e -> e.getKey().name().equals("heartbeat-total"))
            .mapToDouble(e -> ((Number) e.getValue().metricValue()).doubleValue()).sum();
    }

    @Test
    void the_group_heartbeat_interval_is_handed_to_members() throws Exception {
        String topic = Kit.name("cfg-hb", "consumer"), group = "g-" + topic;
        Kit.createTopic(topic, 1);
        try (Admin a = Kit.admin()) {
            alter(a, group, Map.of(SESSION, "50000", HEARTBEAT, "15000"), List.of());
        }
        try (var c = new KafkaConsumer<String, String>(Kit.consumerProps(group, "consumer"))) {
            c.subscribe(List.of(topic));
            long deadline = System.currentTimeMillis() + 30000;
            while (c.assignment().isEmpty() && System.currentTimeMillis() < deadline)
                c.poll(Duration.ofMillis(100));
            assertFalse(c.assignment().isEmpty(), "no assignment");
            for (int i = 0; i < 20; i++) c.poll(Duration.ofMillis(100)); // the acknowledging heartbeat
            double before = heartbeats(c);
            long end = System.currentTimeMillis() + 11000;
            while (System.currentTimeMillis() < end) c.poll(Duration.ofMillis(100));
            double sent = heartbeats(c) - before;
            System.out.printf("heartbeat interval 15000 ms: %.0f heartbeats in 11 s%n", sent);
            // the broker default (5000 ms) would make it 2 or 3
            assertTrue(sent <= 1, sent + " heartbeats in 11 s with a 15 s interval");
        }
    }

    @Test
    void the_group_session_timeout_expires_members() throws Exception {
        long broker = Kit.CONSUMER_SESSION_MS;
        long session = broker + 5000; // not the broker's, and within Kafka's default bounds
        String topic = Kit.name("cfg-session", "consumer"), group = "g-" + topic;
        Kit.createTopic(topic, 1);
        try (Admin a = Kit.admin()) {
            alter(a, group, Map.of(SESSION, Long.toString(session), HEARTBEAT, "5000"), List.of());
            Process p = new ProcessBuilder(ProcessHandle.current().info().command().orElse("java"),
                "-cp", System.getProperty("java.class.path"), "groups.Worker", group, topic, "consumer")
                .redirectError(ProcessBuilder.Redirect.INHERIT).start();
            Thread watchdog = new Thread(() -> {
                try { Thread.sleep(60000); } catch (InterruptedException e) { return; }
                p.destroyForcibly();
            });
            watchdog.setDaemon(true);
            watchdog.start();
            try (var r = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
                String line;
                while ((line = r.readLine()) != null && !line.equals("ASSIGNED [0]"))
                    ;
                assertEquals("ASSIGNED [0]", line, "the member in its own JVM got partition 0");
                watchdog.interrupt();
                p.destroyForcibly(); // SIGKILL: no leave
                p.waitFor(10, TimeUnit.SECONDS);
                long killed = System.currentTimeMillis();
                Kit.waitFor("the member expires", session + 20000, () -> {
                    try {
                        return a.describeConsumerGroups(List.of(group)).all().get(10, TimeUnit.SECONDS)
                            .get(group).members().isEmpty();
                    } catch (Exception e) { return false; }
                }, () -> "");
                long took = System.currentTimeMillis() - killed;
                System.out.printf("group session timeout %d ms (broker's %d ms): member gone %d ms after kill -9%n",
                    session, broker, took);
                // it heartbeats every 5 s: its session ends between session - 5 s and session after the kill
                assertTrue(took >= session - 5500 && took <= session + 1500,
                    "gone " + took + " ms after kill -9 with a group session timeout of " + session + " ms");
            } finally {
                p.destroyForcibly();
            }
        }
    }
}
