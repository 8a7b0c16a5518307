package kafkapg.clients;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.fail;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetOutOfRangeException;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * What every client test shares: the broker's address (env KAFKA_BOOTSTRAP, default
 * 127.0.0.1:9092), unique topic names, clients with short timeouts so that a broker that does not
 * answer fails a test instead of hanging it, topic creation that waits until the topic is served,
 * and reading a known number of records back.
 *
 * Consumers here never join a group: they assign partitions and seek (consumer groups are tested
 * elsewhere).
 */
final class Kit {
    static final String BOOTSTRAP = System.getenv().getOrDefault("KAFKA_BOOTSTRAP", "127.0.0.1:9092");
    static final Duration WAIT = Duration.ofSeconds(30);

    private Kit() {}

    /** A topic name no other test or run uses: jt-BASE-8 hex digits. */
    static String topic(String base) {
        return "jt-" + base + "-" + UUID.randomUUID().toString().substring(0, 8);
    }

    static Map<String, Object> common() {
        Map<String, Object> m = new HashMap<>();
        m.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, BOOTSTRAP);
        m.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, 15000);
        m.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 30000);
        return m;
    }

    static Admin admin() {
        return Admin.create(common());
    }

    /** A producer with the default settings (idempotent, acks=all) plus the given key/value pairs. */
    static KafkaProducer<byte[], byte[]> producer(Object... kv) {
        Map<String, Object> m = common();
        m.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class);
        m.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class);
        m.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, 30000);
        m.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 45000);
        m.remove(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG);
        put(m, kv);
        return new KafkaProducer<>(m);
    }

    /** A consumer without a group (no group.id: assign and seek only) plus the given pairs. */
    static KafkaConsumer<byte[], byte[]> consumer(Object... kv) {
        Map<String, Object> m = common();
        m.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);
        m.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);
        m.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        m.put(ConsumerConfig.FETCH_MAX_WAIT_MS_CONFIG, 200);
        put(m, kv);
        return new KafkaConsumer<>(m);
    }

    private static void put(Map<String, Object> m, Object... kv) {
        for (int i = 0; i < kv.length; i += 2) m.put((String) kv[i], kv[i + 1]);
    }

    /** Creates a topic and waits until describeTopics shows every partition with a leader. */
    static void createTopic(Admin admin, String name, int partitions, Map<String, String> configs)
            throws Exception {
        NewTopic nt = new NewTopic(name, partitions, (short) 1);
        if (configs != null) nt.configs(configs);
        admin.createTopics(List.of(nt)).all().get(30, TimeUnit.SECONDS);
        awaitPartitions(admin, name, partitions);
    }

    static void createTopic(String name, int partitions) throws Exception {
        try (Admin admin = admin()) {
            createTopic(admin, name, partitions, null);
        }
    }

    /** Waits until the topic is described with exactly n partitions, each with a leader. */
    static TopicDescription awaitPartitions(Admin admin, String name, int n) throws Exception {
        long deadline = System.nanoTime() + WAIT.toNanos();
        Throwable last = null;
        TopicDescription d = null;
        while (System.nanoTime() < deadline) {
            try {
                d = admin.describeTopics(List.of(name)).allTopicNames().get(15, TimeUnit.SECONDS).get(name);
                if (d.partitions().size() == n && d.partitions().stream().allMatch(p -> p.leader() != null)) {
                    // The metadata can name a leader before the leader serves the partition (Kafka's
                    // KRaft broker creates the log a moment later); a produce in that window fails
                    // and an idempotent producer's retry can then be out of sequence. ListOffsets
                    // goes to the leader's log, so it answers only when the partition is served.
                    Map<TopicPartition, OffsetSpec> specs = new HashMap<>();
                    for (TopicPartition tp : partitions(name, n)) specs.put(tp, OffsetSpec.latest());
                    admin.listOffsets(specs).all().get(15, TimeUnit.SECONDS);
                    return d;
                }
            } catch (ExecutionException e) {
                last = e.getCause();
            }
            Thread.sleep(100);
        }
        fail("topic " + name + " not served with " + n + " partitions within " + WAIT + ": last description "
                + d + (last == null ? "" : ", last error " + last));
        return null;
    }

    static List<TopicPartition> partitions(String topic, int n) {
        List<TopicPartition> l = new ArrayList<>();
        for (int p = 0; p < n; p++) l.add(new TopicPartition(topic, p));
        return l;
    }

    /**
     * Polls until exactly n records arrived (fails on a timeout), then polls once more briefly to
     * check that no further record follows.
     */
    static List<ConsumerRecord<byte[], byte[]>> poll(KafkaConsumer<byte[], byte[]> c, int n) {
        List<ConsumerRecord<byte[], byte[]>> got = new ArrayList<>();
        long deadline = System.nanoTime() + WAIT.toNanos();
        while (got.size() < n && System.nanoTime() < deadline)
            c.poll(Duration.ofMillis(200)).forEach(got::add);
        if (got.size() < n)
            fail("expected " + n + " records, got " + got.size() + " within " + WAIT + "; positions "
                    + positions(c, c.assignment()));
        c.poll(Duration.ofMillis(300)).forEach(got::add);
        assertEquals(n, got.size(), "records read");
        return got;
    }

    /** Polls until the consumer raises OffsetOutOfRangeException (auto.offset.reset=none); null if not within WAIT. */
    static OffsetOutOfRangeException pollUntilOutOfRange(KafkaConsumer<byte[], byte[]> c) {
        long deadline = System.nanoTime() + WAIT.toNanos();
        while (System.nanoTime() < deadline) {
            try {
                c.poll(Duration.ofMillis(200));
            } catch (OffsetOutOfRangeException e) {
                return e;
            }
        }
        return null;
    }

    static Map<TopicPartition, Long> positions(KafkaConsumer<?, ?> c, Collection<TopicPartition> tps) {
        Map<TopicPartition, Long> m = new HashMap<>();
        for (TopicPartition tp : tps) m.put(tp, c.position(tp));
        return m;
    }

    /** Reads n records from the start of the given partitions with a fresh group-less consumer. */
    static List<ConsumerRecord<byte[], byte[]>> readFromStart(Collection<TopicPartition> tps, int n,
                                                              Object... kv) {
        try (KafkaConsumer<byte[], byte[]> c = consumer(kv)) {
            c.assign(tps);
            c.seekToBeginning(tps);
            return poll(c, n);
        }
    }

    static byte[] bytes(String s) {
        return s.getBytes(java.nio.charset.StandardCharsets.UTF_8);
    }

    static String str(byte[] b) {
        return b == null ? null : new String(b, java.nio.charset.StandardCharsets.UTF_8);
    }
}
