package kafkapg.clients;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.GroupListing;
import org.apache.kafka.clients.admin.ListGroupsOptions;
import org.apache.kafka.clients.admin.ShareGroupDescription;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.errors.GroupIdNotFoundException;
import org.apache.kafka.common.errors.InconsistentGroupProtocolException;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.GroupType;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.junit.jupiter.api.Test;

/**
 * Share groups (KIP-932) with the real KafkaShareConsumer: records shared out among consumers of
 * one partition, acknowledgement (accept, release, reject), acquisition locks that expire, and
 * the delivery limit. Run first against Apache Kafka 4.4. Both brokers must allow record locks of
 * 3 s (group.share.min.record.lock.duration.ms=1000 in Kafka's KAFKA_BROKER_PROPS,
 * kafka.group_share_min_record_lock_duration_ms = 1000 on kafka_pg: test/clients/run).
 */
class ShareGroupTest {
    private static String group(String base) {
        return Kit.topic("sg-" + base);
    }

    private static void groupConfigs(String group, Map<String, String> configs) throws Exception {
        List<AlterConfigOp> ops = new ArrayList<>();
        configs.forEach((k, v) -> ops.add(new AlterConfigOp(new ConfigEntry(k, v), AlterConfigOp.OpType.SET)));
        try (Admin admin = Kit.admin()) {
            admin.incrementalAlterConfigs(Map.of(new ConfigResource(ConfigResource.Type.GROUP, group), ops))
                    .all().get(30, TimeUnit.SECONDS);
        }
    }

    private static KafkaShareConsumer<byte[], byte[]> consumer(String group, Object... kv) {
        Map<String, Object> m = Kit.common();
        m.remove("default.api.timeout.ms");
        m.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        m.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);
        m.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);
        for (int i = 0; i < kv.length; i += 2) m.put((String) kv[i], kv[i + 1]);
        return new KafkaShareConsumer<>(m);
    }

    private static void produce(String topic, int n, int partitions) throws Exception {
        try (KafkaProducer<byte[], byte[]> p = Kit.producer("linger.ms", 0)) {
            for (int i = 0; i < n; i++) {
                p.send(new ProducerRecord<>(topic, i % partitions, null, Kit.bytes("r" + i))).get();
            }
        }
    }

    @Test
    void consumersShareTwoPartitionsEachRecordOnce() throws Exception {
        String topic = Kit.topic("share");
        String group = group("many");
        int n = 400;
        int nconsumers = 8;
        Kit.createTopic(topic, 2);
        groupConfigs(group, Map.of("share.auto.offset.reset", "earliest"));
        produce(topic, n, 2);

        Map<String, Integer> seen = new ConcurrentHashMap<>();
        AtomicInteger duplicates = new AtomicInteger();
        Map<Integer, AtomicInteger> perConsumer = new ConcurrentHashMap<>();
        AtomicBoolean stop = new AtomicBoolean();
        List<Thread> threads = new ArrayList<>();
        for (int c = 0; c < nconsumers; c++) {
            final int id = c;
            perConsumer.put(id, new AtomicInteger());
            Thread t = new Thread(() -> {
                try (KafkaShareConsumer<byte[], byte[]> sc = consumer(group, "max.poll.records", 10)) {
                    sc.subscribe(List.of(topic));
                    while (!stop.get()) {
                        ConsumerRecords<byte[], byte[]> recs = sc.poll(Duration.ofMillis(200));
                        for (ConsumerRecord<byte[], byte[]> r : recs) {
                            if (seen.put(Kit.str(r.value()), id) != null) duplicates.incrementAndGet();
                            perConsumer.get(id).incrementAndGet();
                            Thread.sleep(5);    // some work, so that the others get some too
                        }
                    }
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            });
            t.start();
            threads.add(t);
        }
        long deadline = System.currentTimeMillis() + 90_000;
        while (seen.size() < n && System.currentTimeMillis() < deadline) Thread.sleep(200);
        Thread.sleep(1000);    // anything delivered twice would show now
        stop.set(true);
        for (Thread t : threads) t.join(30_000);

        assertEquals(n, seen.size(), "every record delivered");
        assertEquals(0, duplicates.get(), "no record delivered twice (implicit acknowledgement)");
        long working = perConsumer.values().stream().filter(a -> a.get() > 0).count();
        System.out.println("share: records per consumer " + perConsumer);
        assertTrue(working >= 2, "the records were shared out among consumers: " + perConsumer);
    }

    @Test
    void releasedRedeliveredRejectedNot() throws Exception {
        String topic = Kit.topic("share-ack");
        String group = group("ack");
        Kit.createTopic(topic, 1);
        groupConfigs(group, Map.of("share.auto.offset.reset", "earliest"));
        produce(topic, 5, 1);
        try (KafkaShareConsumer<byte[], byte[]> sc = consumer(group, "share.acknowledgement.mode", "explicit")) {
            sc.subscribe(List.of(topic));
            List<ConsumerRecord<byte[], byte[]>> got = pollAtLeast(sc, 5, 30_000);
            assertEquals(5, got.size());
            for (ConsumerRecord<byte[], byte[]> r : got) {
                String v = Kit.str(r.value());
                assertEquals(1, (int) r.deliveryCount().get(), "first delivery of " + v);
                sc.acknowledge(r, v.equals("r0") ? AcknowledgeType.RELEASE
                        : v.equals("r1") ? AcknowledgeType.REJECT : AcknowledgeType.ACCEPT);
            }
            sc.commitSync(Duration.ofSeconds(30));
            List<ConsumerRecord<byte[], byte[]>> again = pollAtLeast(sc, 1, 30_000);
            for (ConsumerRecord<byte[], byte[]> r : again) sc.acknowledge(r, AcknowledgeType.ACCEPT);
            sc.commitSync(Duration.ofSeconds(30));
            assertEquals(1, again.size(), "only the released record comes back");
            assertEquals("r0", Kit.str(again.get(0).value()));
            assertEquals(2, (int) again.get(0).deliveryCount().get());
            assertTrue(pollAtLeast(sc, 1, 3_000).isEmpty(), "the rejected and accepted ones never come back");
        }
    }

    @Test
    void stalledConsumerRecordsRedeliveredAfterLock() throws Exception {
        String topic = Kit.topic("share-lock");
        String group = group("lock");
        Kit.createTopic(topic, 1);
        groupConfigs(group, Map.of("share.auto.offset.reset", "earliest", "share.record.lock.duration.ms", "3000"));
        produce(topic, 3, 1);
        try (KafkaShareConsumer<byte[], byte[]> a = consumer(group, "share.acknowledgement.mode", "explicit");
             KafkaShareConsumer<byte[], byte[]> b = consumer(group, "share.acknowledgement.mode", "explicit")) {
            a.subscribe(List.of(topic));
            List<ConsumerRecord<byte[], byte[]>> held = pollAtLeast(a, 3, 30_000);
            assertEquals(3, held.size());
            long acquiredAt = System.currentTimeMillis();
            // a stalls: no poll, no acknowledgement; b gets the records once the locks expire
            b.subscribe(List.of(topic));
            List<ConsumerRecord<byte[], byte[]>> redelivered = pollAtLeast(b, 3, 30_000);
            long after = System.currentTimeMillis() - acquiredAt;
            assertEquals(3, redelivered.size());
            for (ConsumerRecord<byte[], byte[]> r : redelivered) {
                assertEquals(2, (int) r.deliveryCount().get());
                b.acknowledge(r, AcknowledgeType.ACCEPT);
            }
            b.commitSync(Duration.ofSeconds(30));
            assertTrue(after >= 2500, "not before the lock expired (" + after + " ms)");
        }
    }

    @Test
    void killedConsumerRecordsRedeliveredAfterLock() throws Exception {
        String topic = Kit.topic("share-kill");
        String group = group("kill");
        Kit.createTopic(topic, 1);
        groupConfigs(group, Map.of("share.auto.offset.reset", "earliest", "share.record.lock.duration.ms", "3000"));
        produce(topic, 3, 1);
        String java = Paths.get(System.getProperty("java.home"), "bin", "java").toString();
        File log = File.createTempFile("share-worker-", ".log");
        ProcessBuilder pb = new ProcessBuilder(java, "-Xmx256m", "-cp", System.getProperty("java.class.path"),
                ShareWorker.class.getName(), Kit.BOOTSTRAP, topic, group);
        pb.redirectErrorStream(true);
        pb.redirectOutput(log);
        Process worker = pb.start();
        try {
            long deadline = System.currentTimeMillis() + 60_000;
            long acquired = 0;
            while (System.currentTimeMillis() < deadline && acquired < 3) {
                Thread.sleep(200);
                acquired = Files.readAllLines(log.toPath()).stream().filter(l -> l.startsWith("acquired ")).count();
            }
            assertEquals(3, acquired, "the worker acquired the 3 records");
        } finally {
            worker.destroyForcibly();    // SIGKILL: no acknowledgement, no leaving the group
            worker.waitFor(30, TimeUnit.SECONDS);
            log.delete();
        }
        try (KafkaShareConsumer<byte[], byte[]> b = consumer(group, "share.acknowledgement.mode", "explicit")) {
            b.subscribe(List.of(topic));
            List<ConsumerRecord<byte[], byte[]>> redelivered = pollAtLeast(b, 3, 30_000);
            assertEquals(3, redelivered.size(), "the killed consumer's records come back");
            for (ConsumerRecord<byte[], byte[]> r : redelivered) {
                assertEquals(2, (int) r.deliveryCount().get());
                b.acknowledge(r, AcknowledgeType.ACCEPT);
            }
            b.commitSync(Duration.ofSeconds(30));
        }
    }

    @Test
    void deliveryLimitArchivesPoisonRecord() throws Exception {
        String topic = Kit.topic("share-poison");
        String group = group("poison");
        Kit.createTopic(topic, 1);
        groupConfigs(group, Map.of("share.auto.offset.reset", "earliest", "share.delivery.count.limit", "3"));
        produce(topic, 1, 1);
        int deliveries = 0;
        try (KafkaShareConsumer<byte[], byte[]> sc = consumer(group, "share.acknowledgement.mode", "explicit")) {
            sc.subscribe(List.of(topic));
            long deadline = System.currentTimeMillis() + 30_000;
            while (System.currentTimeMillis() < deadline) {
                ConsumerRecords<byte[], byte[]> recs = sc.poll(Duration.ofMillis(500));
                for (ConsumerRecord<byte[], byte[]> r : recs) {
                    deliveries++;
                    assertEquals(deliveries, (int) r.deliveryCount().get());
                    sc.acknowledge(r, AcknowledgeType.RELEASE);
                }
                if (!recs.isEmpty()) sc.commitSync(Duration.ofSeconds(30));
                if (deliveries >= 3 && recs.isEmpty()) break;
            }
            assertTrue(pollAtLeast(sc, 1, 3_000).isEmpty(), "archived after the limit");
        }
        assertEquals(3, deliveries, "delivered share.delivery.count.limit times, then archived");
    }

    @Test
    void adminListsAndDescribesShareGroups() throws Exception {
        String topic = Kit.topic("share-admin");
        String group = group("admin");
        Kit.createTopic(topic, 2);
        try (KafkaShareConsumer<byte[], byte[]> sc = consumer(group);
             Admin admin = Kit.admin()) {
            sc.subscribe(List.of(topic));
            ShareGroupDescription d = null;
            long deadline = System.currentTimeMillis() + 30_000;
            while (System.currentTimeMillis() < deadline) {
                sc.poll(Duration.ofMillis(200));
                try {
                    d = admin.describeShareGroups(List.of(group)).describedGroups().get(group).get(30, TimeUnit.SECONDS);
                } catch (ExecutionException e) {
                    continue;   // not there yet: GroupIdNotFoundException until the first heartbeat
                }
                if (d.members().size() == 1 && !d.members().iterator().next().assignment().topicPartitions().isEmpty())
                    break;
            }
            assertEquals(1, d.members().size());
            assertEquals(2, d.members().iterator().next().assignment().topicPartitions().size());
            Collection<GroupListing> listed = admin.listGroups(ListGroupsOptions.forShareGroups()).all()
                    .get(30, TimeUnit.SECONDS);
            Set<String> ids = new HashSet<>();
            for (GroupListing g : listed) {
                ids.add(g.groupId());
                assertEquals(GroupType.SHARE, g.type().get());
            }
            assertTrue(ids.contains(group), "ListGroups with the share type filter lists " + group);
            Collection<GroupListing> consumers = admin.listGroups(ListGroupsOptions.forConsumerGroups()).all()
                    .get(30, TimeUnit.SECONDS);
            for (GroupListing g : consumers) assertFalse(g.groupId().equals(group));
            // one namespace of group ids: a consumer cannot join the share group's id
            for (String protocol : List.of("classic", "consumer")) {
                try (KafkaConsumer<byte[], byte[]> kc = Kit.consumer(ConsumerConfig.GROUP_ID_CONFIG, group,
                        ConsumerConfig.GROUP_PROTOCOL_CONFIG, protocol)) {
                    kc.subscribe(List.of(topic));
                    Class<? extends KafkaException> expected = protocol.equals("classic")
                            ? InconsistentGroupProtocolException.class : GroupIdNotFoundException.class;
                    Exception e = assertThrows(expected, () -> {
                        long until = System.currentTimeMillis() + 20_000;
                        while (System.currentTimeMillis() < until) kc.poll(Duration.ofMillis(200));
                    }, protocol + " consumer joining share group " + group);
                    System.out.println("share: a " + protocol + " consumer on a share group's id: " + e);
                }
            }
        }
    }

    private static List<ConsumerRecord<byte[], byte[]>> pollAtLeast(KafkaShareConsumer<byte[], byte[]> sc, int n,
                                                                    long ms) {
        List<ConsumerRecord<byte[], byte[]>> out = new ArrayList<>();
        long deadline = System.currentTimeMillis() + ms;
        while (out.size() < n && System.currentTimeMillis() < deadline) {
            for (ConsumerRecord<byte[], byte[]> r : sc.poll(Duration.ofMillis(200))) out.add(r);
        }
        return out;
    }
}
