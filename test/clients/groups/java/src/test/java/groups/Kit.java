package groups;

import java.time.Duration;
import java.util.*;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.*;

/** Helpers shared by the group tests. */
final class Kit {
    static final String BOOTSTRAP = Optional.ofNullable(System.getenv("KAFKA_BOOTSTRAP")).orElse("127.0.0.1:9092");
    /** The broker's consumer-protocol session timeout (group.consumer.session.timeout.ms). */
    static final long CONSUMER_SESSION_MS =
        Long.parseLong(Optional.ofNullable(System.getenv("GROUPS_CONSUMER_SESSION_MS")).orElse("45000"));
    static final String RUN = Long.toString(System.currentTimeMillis() % 100000000L, 36);

    static String name(String what, String protocol) { return "grp-" + what + "-" + protocol + "-" + RUN; }

    static Admin admin() {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, BOOTSTRAP);
        return Admin.create(p);
    }

    static void createTopic(String topic, int partitions) throws Exception {
        try (Admin a = admin()) {
            a.createTopics(List.of(new NewTopic(topic, partitions, (short) 1))).all().get(30, TimeUnit.SECONDS);
            long deadline = System.currentTimeMillis() + 30000;
            while (true) { // until every partition has a leader in the metadata
                try {
                    var d = a.describeTopics(List.of(topic)).allTopicNames().get(10, TimeUnit.SECONDS).get(topic);
                    if (d.partitions().size() == partitions && d.partitions().stream().allMatch(x -> x.leader() != null))
                        break;
                } catch (Exception e) {
                    if (System.currentTimeMillis() > deadline) throw e;
                }
                if (System.currentTimeMillis() > deadline) throw new AssertionError("topic " + topic + " not ready");
                Thread.sleep(100);
            }
        }
    }

    /** Produces keys prefix0..prefix(n-1), record i to partition i % partitions. */
    static void produce(String topic, int partitions, String prefix, int n) throws Exception {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, BOOTSTRAP);
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.LINGER_MS_CONFIG, 5);
        try (var pr = new KafkaProducer<String, String>(p, new StringSerializer(), new StringSerializer())) {
            for (int i = 0; i < n; i++)
                pr.send(new ProducerRecord<>(topic, i % partitions, prefix + i, "value-" + i));
            pr.flush();
        }
    }

    static Properties consumerProps(String group, String protocol) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, BOOTSTRAP);
        p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        p.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, protocol);
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        if (protocol.equals("classic")) {
            p.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, "6000");
            p.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, "1000");
        }
        return p;
    }

    static void waitFor(String what, long timeoutMs, BooleanSupplier cond, java.util.function.Supplier<String> state)
            throws InterruptedException {
        long deadline = System.currentTimeMillis() + timeoutMs;
        while (!cond.getAsBoolean()) {
            if (System.currentTimeMillis() > deadline)
                throw new AssertionError("timed out after " + timeoutMs + " ms waiting for " + what + "; now: " + state.get());
            Thread.sleep(50);
        }
    }

    static Set<TopicPartition> union(Collection<Set<TopicPartition>> sets) {
        Set<TopicPartition> u = new HashSet<>();
        for (var s : sets) u.addAll(s);
        return u;
    }

    static String show(Set<TopicPartition> s) {
        List<Integer> l = new ArrayList<>();
        for (var tp : s) l.add(tp.partition());
        Collections.sort(l);
        return l.toString();
    }

    private Kit() {}
}
