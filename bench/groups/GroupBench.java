/*
 * Measurements for bench/groups/bench.sh, made the same way against Apache Kafka and kafka_pg:
 *
 *   create BOOTSTRAP TOPIC PARTITIONS
 *       creates the topic and waits until every partition has a leader.
 *   consume BOOTSTRAP TOPIC RECORDS MEMBERS GROUP
 *       MEMBERS consumers of a new group (group.protocol=classic, client defaults, auto commit on)
 *       subscribe to TOPIC, each polling in its own thread, and read RECORDS records from the start.
 *       Prints records/s and MB/s (record values) from the first record received to the last, and
 *       the total time from the consumers' creation (group formation included).
 *   rebalance BOOTSTRAP TOPIC PROTOCOL MEMBERS GROUP
 *       MEMBERS-1 consumers (group.protocol=PROTOCOL, client defaults) form a stable group (every
 *       member holds partitions, the partitions are split without overlap, and nothing changed for
 *       2 s); then one more member joins. Prints the time from the joiner's creation until all
 *       MEMBERS members hold a non-empty assignment and every partition is held by exactly one.
 *
 * Output: one line of key=value pairs, for bench.sh to parse.
 */
import java.time.Duration;
import java.util.*;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

public class GroupBench {
    public static void main(String[] a) throws Exception {
        switch (a[0]) {
            case "create" -> create(a[1], a[2], Integer.parseInt(a[3]));
            case "consume" -> consume(a[1], a[2], Long.parseLong(a[3]), Integer.parseInt(a[4]), a[5]);
            case "rebalance" -> rebalance(a[1], a[2], a[3], Integer.parseInt(a[4]), a[5]);
            default -> throw new IllegalArgumentException(a[0]);
        }
        System.exit(0);
    }

    static void create(String bootstrap, String topic, int partitions) throws Exception {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (Admin admin = Admin.create(p)) {
            admin.createTopics(List.of(new NewTopic(topic, partitions, (short) 1))).all().get(60, TimeUnit.SECONDS);
            long deadline = System.currentTimeMillis() + 60000;
            while (System.currentTimeMillis() < deadline) {
                try {
                    var d = admin.describeTopics(List.of(topic)).allTopicNames().get(10, TimeUnit.SECONDS).get(topic);
                    if (d.partitions().size() == partitions && d.partitions().stream().allMatch(x -> x.leader() != null)) {
                        System.out.println("created=" + topic);
                        return;
                    }
                } catch (Exception e) { /* not yet */ }
                Thread.sleep(100);
            }
            throw new RuntimeException("topic not ready");
        }
    }

    static Properties props(String bootstrap, String group, String protocol) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        p.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, protocol);
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        return p;
    }

    static void consume(String bootstrap, String topic, long records, int members, String group) throws Exception {
        AtomicLong count = new AtomicLong(), bytes = new AtomicLong(), first = new AtomicLong(), last = new AtomicLong();
        long start = System.nanoTime();
        List<Thread> threads = new ArrayList<>();
        for (int i = 0; i < members; i++) {
            Thread t = new Thread(() -> {
                try (var c = new KafkaConsumer<byte[], byte[]>(props(bootstrap, group, "classic"))) {
                    c.subscribe(List.of(topic));
                    while (count.get() < records) {
                        var recs = c.poll(Duration.ofMillis(100));
                        if (recs.isEmpty()) continue;
                        long b = 0;
                        for (var r : recs) b += r.value() == null ? 0 : r.value().length;
                        first.compareAndSet(0, System.nanoTime());
                        bytes.addAndGet(b);
                        if (count.addAndGet(recs.count()) >= records) last.compareAndSet(0, System.nanoTime());
                    }
                }
            });
            t.start();
            threads.add(t);
        }
        for (Thread t : threads) t.join(600000);
        double s = (last.get() - first.get()) / 1e9, total = (last.get() - start) / 1e9;
        System.out.printf(Locale.ROOT, "records=%d seconds=%.3f records_per_s=%.0f mb_per_s=%.2f total_s=%.3f%n",
            count.get(), s, count.get() / s, bytes.get() / s / 1e6, total);
    }

    static final class M {
        volatile Set<TopicPartition> assignment = Set.of();
        volatile boolean running = true;
        Thread thread;
    }

    static M member(String bootstrap, String topic, String group, String protocol) {
        M m = new M();
        m.thread = new Thread(() -> {
            try (var c = new KafkaConsumer<byte[], byte[]>(props(bootstrap, group, protocol))) {
                c.subscribe(List.of(topic));
                while (m.running) {
                    c.poll(Duration.ofMillis(20));
                    m.assignment = Set.copyOf(c.assignment());
                }
            }
        });
        m.thread.setDaemon(true);
        m.thread.start();
        return m;
    }

    static String describe(List<M> ms) {
        StringBuilder b = new StringBuilder();
        for (M m : ms) {
            List<Integer> l = new ArrayList<>();
            for (var tp : m.assignment) l.add(tp.partition());
            Collections.sort(l);
            b.append(l.toString().replace(" ", ""));
        }
        return b.toString();
    }

    static boolean settled(List<M> ms, int partitions) {
        Set<TopicPartition> all = new HashSet<>();
        int sum = 0;
        for (M m : ms) {
            var s = m.assignment;
            if (s.isEmpty()) return false;
            all.addAll(s);
            sum += s.size();
        }
        return all.size() == partitions && sum == partitions;
    }

    static void rebalance(String bootstrap, String topic, String protocol, int members, String group) throws Exception {
        int partitions;
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (Admin admin = Admin.create(p)) {
            partitions = admin.describeTopics(List.of(topic)).allTopicNames().get(30, TimeUnit.SECONDS).get(topic).partitions().size();
        }
        List<M> ms = new ArrayList<>();
        for (int i = 0; i < members - 1; i++) ms.add(member(bootstrap, topic, group, protocol));
        long deadline = System.currentTimeMillis() + 180000, since = 0;
        String lastState = "";
        while (true) { // stable: settled and unchanged for 2 s
            String state = ms.stream().map(m -> m.assignment.toString()).reduce("", String::concat);
            if (settled(ms, partitions) && state.equals(lastState)) {
                if (since == 0) since = System.currentTimeMillis();
                if (System.currentTimeMillis() - since >= 2000) break;
            } else since = 0;
            lastState = state;
            if (System.currentTimeMillis() > deadline) {
                System.out.println("protocol=" + protocol + " error=the_group_of_" + (members - 1) + "_never_settled state=" + describe(ms));
                System.exit(1);
            }
            Thread.sleep(10);
        }
        long t0 = System.nanoTime();
        ms.add(member(bootstrap, topic, group, protocol));
        deadline = System.currentTimeMillis() + 180000;
        while (!settled(ms, partitions)) {
            if (System.currentTimeMillis() > deadline) {
                System.out.println("protocol=" + protocol + " error=the_group_of_" + members + "_never_settled state=" + describe(ms));
                System.exit(1);
            }
            Thread.sleep(2);
        }
        double s = (System.nanoTime() - t0) / 1e9;
        System.out.printf(Locale.ROOT, "protocol=%s members=%d partitions=%d rebalance_s=%.3f%n", protocol, members, partitions, s);
        for (M m : ms) m.running = false;
        for (M m : ms) m.thread.join(30000);
    }
}
