package groups;

import static org.junit.jupiter.api.Assertions.*;

import java.io.*;
import java.nio.charset.StandardCharsets;
import java.util.*;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Consumer groups with kafka-clients 4.4, for group.protocol classic and consumer. */
class GroupsTest {
    static final long SETTLE_MS = 60000;

    static List<Member> start(int n, String group, String protocol, String topic, boolean commit) {
        List<Member> ms = new ArrayList<>();
        for (int i = 0; i < n; i++)
            ms.add(new Member(group + "#" + i, Kit.consumerProps(group, protocol), topic, commit));
        return ms;
    }

    static void closeAll(List<Member> ms) throws InterruptedException {
        for (var m : ms) m.close();
    }

    static boolean split(List<Member> ms, int partitions, int each) {
        var sets = ms.stream().map(m -> m.assignment).collect(Collectors.toList());
        return Kit.union(sets).size() == partitions && sets.stream().allMatch(s -> s.size() == each)
            && sets.stream().mapToInt(Set::size).sum() == partitions;
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"classic", "consumer"})
    void three_members_split_six_partitions(String protocol) throws Exception {
        String topic = Kit.name("split", protocol);
        Kit.createTopic(topic, 6);
        var ms = start(3, Kit.name("g-split", protocol), protocol, topic, false);
        try {
            Kit.waitFor("2/2/2", SETTLE_MS, () -> split(ms, 6, 2), ms::toString);
            Thread.sleep(2000);
            assertTrue(split(ms, 6, 2), "still 2/2/2 two seconds later: " + ms);
        } finally { closeAll(ms); }
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"classic", "consumer"})
    void fourth_member_of_three_partitions_is_idle(String protocol) throws Exception {
        String topic = Kit.name("idle", protocol);
        Kit.createTopic(topic, 3);
        var ms = start(4, Kit.name("g-idle", protocol), protocol, topic, false);
        java.util.function.BooleanSupplier ok = () -> {
            var sets = ms.stream().map(m -> m.assignment).collect(Collectors.toList());
            return Kit.union(sets).size() == 3 && sets.stream().filter(Set::isEmpty).count() == 1
                && sets.stream().mapToInt(Set::size).sum() == 3;
        };
        try {
            Kit.waitFor("1/1/1/0", SETTLE_MS, ok, ms::toString);
            Thread.sleep(3000);
            assertTrue(ok.getAsBoolean(), "the fourth stays idle: " + ms);
        } finally { closeAll(ms); }
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"classic", "consumer"})
    void killed_member_partitions_move_to_the_others(String protocol) throws Exception {
        String topic = Kit.name("kill", protocol), group = Kit.name("g-kill", protocol);
        Kit.createTopic(topic, 6);
        var ms = start(2, group, protocol, topic, false);
        Process p = new ProcessBuilder(ProcessHandle.current().info().command().orElse("java"),
            "-cp", System.getProperty("java.class.path"), "groups.Worker", group, topic, protocol)
            .redirectError(ProcessBuilder.Redirect.INHERIT).start();
        final String[] workerParts = {"(none)"};
        Thread reader = new Thread(() -> {
            try (var r = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
                String line;
                while ((line = r.readLine()) != null)
                    if (line.startsWith("ASSIGNED ")) workerParts[0] = line.substring(9);
            } catch (IOException e) { /* the process died */ }
        });
        reader.setDaemon(true);
        reader.start();
        try {
            Kit.waitFor("2/2/2 with the separate process", SETTLE_MS,
                () -> split(ms, 4, 2) && workerParts[0].split(",").length == 2,
                () -> ms + " worker=" + workerParts[0]);
            p.destroyForcibly(); // SIGKILL: no LeaveGroup
            p.waitFor(10, TimeUnit.SECONDS);
            long killed = System.currentTimeMillis();
            long session = protocol.equals("classic") ? 6000 : Kit.CONSUMER_SESSION_MS;
            Kit.waitFor("the two survivors hold all 6 partitions", session + 20000,
                () -> split(ms, 6, 3), ms::toString);
            long took = System.currentTimeMillis() - killed;
            System.out.printf("kill %s: partitions moved %d ms after kill -9 (session timeout %d ms)%n", protocol, took, session);
            assertTrue(took >= session - 2500, "moved after " + took + " ms, before the session timeout " + session);
        } finally {
            p.destroyForcibly();
            closeAll(ms);
        }
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"classic", "consumer"})
    void restarted_consumer_resumes_at_committed_offsets(String protocol) throws Exception {
        String topic = Kit.name("resume", protocol), group = Kit.name("g-resume", protocol);
        Kit.createTopic(topic, 3);
        Kit.produce(topic, 3, "k", 300);
        var props = Kit.consumerProps(group, protocol);
        props.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "20");
        Map<String, Integer> seen = new HashMap<>();
        var first = new Member("first", props, topic, true);
        first.stopAfter = 150;
        first.join();
        assertNull(first.error.get(), "first consumer failed");
        int n1 = first.records.size();
        assertTrue(n1 >= 150 && n1 < 300, "first read " + n1);
        for (var r : first.records) seen.merge(r.key(), 1, Integer::sum);
        var second = new Member("second", props, topic, true);
        try {
            Kit.waitFor("the rest of the 300 records", SETTLE_MS, () -> n1 + second.records.size() >= 300, second::toString);
            Thread.sleep(2000); // anything repeated would arrive now
        } finally { second.close(); }
        assertNull(second.error.get(), "second consumer failed");
        for (var r : second.records) seen.merge(r.key(), 1, Integer::sum);
        var dup = seen.entrySet().stream().filter(e -> e.getValue() != 1).map(Map.Entry::getKey).collect(Collectors.toList());
        assertEquals(List.of(), dup, "keys read more than once (first " + n1 + ", second " + second.records.size() + ")");
        assertEquals(300, seen.size(), "distinct keys read");
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"classic", "consumer"})
    void two_groups_read_the_same_topic_independently(String protocol) throws Exception {
        String topic = Kit.name("two", protocol);
        Kit.createTopic(topic, 3);
        Kit.produce(topic, 3, "k", 100);
        var a = start(2, Kit.name("g-two-a", protocol), protocol, topic, true);
        var b = start(1, Kit.name("g-two-b", protocol), protocol, topic, true);
        try {
            Kit.waitFor("100 records in each group", SETTLE_MS,
                () -> a.get(0).records.size() + a.get(1).records.size() >= 100 && b.get(0).records.size() >= 100,
                () -> a + " " + b);
            Thread.sleep(1500);
        } finally { closeAll(a); closeAll(b); }
        Set<String> ka = new HashSet<>(), kb = new HashSet<>();
        int na = 0;
        for (var m : a) { na += m.records.size(); for (var r : m.records) ka.add(r.key()); }
        for (var r : b.get(0).records) kb.add(r.key());
        assertEquals(100, na, "group a records");
        assertEquals(100, ka.size(), "group a keys");
        assertEquals(100, b.get(0).records.size(), "group b records");
        assertEquals(100, kb.size(), "group b keys");
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"classic", "consumer"})
    void static_member_restarts_without_rebalance(String protocol) throws Exception {
        String topic = Kit.name("static", protocol), group = Kit.name("g-static", protocol);
        Kit.createTopic(topic, 6);
        List<Member> ms = new ArrayList<>();
        java.util.function.IntFunction<Properties> props = i -> {
            var p = Kit.consumerProps(group, protocol);
            p.put(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, "instance-" + i);
            if (protocol.equals("classic")) p.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, "30000");
            return p;
        };
        for (int i = 0; i < 3; i++) ms.add(new Member("static-" + i, props.apply(i), topic, false));
        try {
            Kit.waitFor("2/2/2", SETTLE_MS, () -> split(ms, 6, 2), ms::toString);
            Thread.sleep(1000);
            int gen0 = ms.get(0).generation, gen1 = ms.get(1).generation;
            int calls0 = ms.get(0).assignedCalls.get(), calls1 = ms.get(1).assignedCalls.get();
            var parts0 = ms.get(0).assignment;
            var parts2 = ms.get(2).assignment;
            ms.get(2).close(); // a static member does not leave on close
            Thread.sleep(1000);
            var again = new Member("static-2-again", props.apply(2), topic, false);
            ms.set(2, again);
            Kit.waitFor("the restarted member gets partitions", SETTLE_MS, () -> !again.assignment.isEmpty(), ms::toString);
            Thread.sleep(3000);
            assertEquals(parts2, again.assignment, "the restarted static member gets its old partitions: " + ms);
            assertEquals(gen0, ms.get(0).generation, "member 0 generation: " + ms);
            assertEquals(gen1, ms.get(1).generation, "member 1 generation: " + ms);
            assertEquals(calls0, ms.get(0).assignedCalls.get(), "member 0 rebalance listener calls: " + ms);
            assertEquals(calls1, ms.get(1).assignedCalls.get(), "member 1 rebalance listener calls: " + ms);
            assertEquals(parts0, ms.get(0).assignment, "member 0 partitions: " + ms);
            try (var admin = Kit.admin()) {
                var d = admin.describeConsumerGroups(List.of(group)).all().get(30, TimeUnit.SECONDS).get(group);
                assertEquals(3, d.members().size(), "members described: " + d);
                var ids = d.members().stream().map(x -> x.groupInstanceId().orElse("")).sorted().collect(Collectors.toList());
                assertEquals(List.of("instance-0", "instance-1", "instance-2"), ids);
                assertEquals("STABLE", d.groupState().toString().toUpperCase(Locale.ROOT), "state: " + d);
            }
        } finally { closeAll(ms); }
    }

    static String cli(String... args) throws Exception {
        List<String> cmd = new ArrayList<>(List.of("bash", System.getProperty("kafka.sh"), "cli"));
        cmd.addAll(List.of(args));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(120, TimeUnit.SECONDS));
        assertEquals(0, p.exitValue(), "exit status of " + cmd + ": " + out);
        return out;
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"classic", "consumer"})
    void kafka_consumer_groups_describe_shows_members_and_lag(String protocol) throws Exception {
        String topic = Kit.name("describe", protocol), group = Kit.name("g-describe", protocol);
        Kit.createTopic(topic, 2);
        Kit.produce(topic, 2, "a", 10);
        var m = new Member("describe", Kit.consumerProps(group, protocol), topic, true);
        try {
            Kit.waitFor("10 records", SETTLE_MS, () -> m.records.size() >= 10, m::toString);
            m.pause = true;
            Thread.sleep(500);
            Kit.produce(topic, 2, "b", 6); // lag 3 + 3
            String out = cli("kafka-consumer-groups", "--bootstrap-server", Kit.BOOTSTRAP, "--describe", "--group", group);
            System.out.println(out);
            int lag = 0, rows = 0;
            for (String line : out.split("\n")) {
                String[] f = line.trim().split("\\s+");
                if (f.length >= 7 && f[0].equals(group) && f[1].equals(topic)) {
                    rows++;
                    assertEquals("5", f[3], "CURRENT-OFFSET in " + line);
                    assertEquals("8", f[4], "LOG-END-OFFSET in " + line);
                    lag += Integer.parseInt(f[5]);
                    assertNotEquals("-", f[6], "CONSUMER-ID in " + line);
                    assertTrue(f.length == 9 && f[7].equals("/127.0.0.1") && f[8].startsWith("consumer-" + group),
                        "HOST /127.0.0.1 and CLIENT-ID consumer-" + group + "-N in: " + line);
                }
            }
            assertEquals(2, rows, "partition rows in:\n" + out);
            assertEquals(6, lag, "total lag in:\n" + out);
            out = cli("kafka-consumer-groups", "--bootstrap-server", Kit.BOOTSTRAP, "--describe", "--members", "--group", group);
            System.out.println(out);
            var members = Arrays.stream(out.split("\n")).map(String::trim).filter(l -> l.startsWith(group + " "))
                .map(l -> l.split("\\s+")).collect(Collectors.toList());
            assertEquals(1, members.size(), "member rows in:\n" + out);
            String[] f = members.get(0);
            assertTrue(f.length == 5 && f[2].equals("/127.0.0.1") && f[3].startsWith("consumer-" + group) && f[4].equals("2"),
                "GROUP CONSUMER-ID HOST(/127.0.0.1) CLIENT-ID(consumer-" + group + "-N) #PARTITIONS(2) in:\n" + out);
        } finally { m.close(); }
    }
}
