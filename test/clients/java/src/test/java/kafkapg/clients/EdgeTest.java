package kafkapg.clients;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.CreateTopicsOptions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetOutOfRangeException;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.InvalidPartitionsException;
import org.apache.kafka.common.errors.InvalidReplicationFactorException;
import org.apache.kafka.common.errors.InvalidTopicException;
import org.apache.kafka.common.errors.RecordTooLargeException;
import org.apache.kafka.common.record.TimestampType;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.Test;

/** Errors a client must see, concurrency, and topic settings that change what the broker stores. */
class EdgeTest {

    @Test
    void a_record_over_the_topics_max_message_bytes_is_refused_with_RecordTooLarge() throws Exception {
        String t = Kit.topic("edge-toolarge");
        try (Admin admin = Kit.admin()) {
            Kit.createTopic(admin, t, 1, Map.of("max.message.bytes", "10000"));
        }
        try (KafkaProducer<byte[], byte[]> p = Kit.producer(ProducerConfig.COMPRESSION_TYPE_CONFIG, "none")) {
            ExecutionException e = assertThrows(ExecutionException.class,
                    () -> p.send(new ProducerRecord<>(t, 0, null, new byte[20000])).get(60, TimeUnit.SECONDS));
            assertInstanceOf(RecordTooLargeException.class, e.getCause());
            // the producer still works for records that fit
            assertEquals(0, p.send(new ProducerRecord<>(t, 0, null, new byte[5000])).get().offset());
        }
    }

    @Test
    void fetching_past_the_end_with_auto_offset_reset_none_raises_OffsetOutOfRange() throws Exception {
        String t = Kit.topic("edge-oor");
        Kit.createTopic(t, 1);
        TopicPartition tp = new TopicPartition(t, 0);
        try (KafkaProducer<byte[], byte[]> p = Kit.producer()) {
            for (int i = 0; i < 5; i++) p.send(new ProducerRecord<>(t, 0, null, Kit.bytes("r" + i)));
        }
        try (KafkaConsumer<byte[], byte[]> c = Kit.consumer(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "none")) {
            c.assign(List.of(tp));
            c.seek(tp, 50);
            OffsetOutOfRangeException seen = Kit.pollUntilOutOfRange(c);
            assertNotNull(seen, "OffsetOutOfRangeException for offset 50 of a 5-record log");
            assertEquals(50L, seen.offsetOutOfRangePartitions().get(tp));
        }
    }

    @Test
    void reading_below_the_log_start_after_delete_records_resets_to_the_new_start() throws Exception {
        String t = Kit.topic("edge-below");
        Kit.createTopic(t, 1);
        TopicPartition tp = new TopicPartition(t, 0);
        try (KafkaProducer<byte[], byte[]> p = Kit.producer()) {
            for (int i = 0; i < 20; i++) p.send(new ProducerRecord<>(t, 0, null, Kit.bytes("r" + i)));
        }
        try (Admin admin = Kit.admin()) {
            admin.deleteRecords(Map.of(tp, RecordsToDelete.beforeOffset(12))).all().get(30, TimeUnit.SECONDS);
        }
        try (KafkaConsumer<byte[], byte[]> c = Kit.consumer()) {
            c.assign(List.of(tp));
            c.seek(tp, 3);
            List<ConsumerRecord<byte[], byte[]>> got = Kit.poll(c, 8);
            assertEquals(12, got.get(0).offset());
            assertEquals("r12", Kit.str(got.get(0).value()));
        }
    }

    @Test
    void concurrent_producers_to_one_partition_get_distinct_contiguous_offsets() throws Exception {
        String t = Kit.topic("edge-concurrent");
        Kit.createTopic(t, 1);
        int producers = 4, each = 1500;
        List<Thread> threads = new ArrayList<>();
        List<Long> offsets = java.util.Collections.synchronizedList(new ArrayList<>());
        List<Throwable> errors = java.util.Collections.synchronizedList(new ArrayList<>());
        for (int w = 0; w < producers; w++) {
            final int id = w;
            threads.add(new Thread(() -> {
                try (KafkaProducer<byte[], byte[]> p = Kit.producer(ProducerConfig.LINGER_MS_CONFIG, 1,
                        ProducerConfig.BATCH_SIZE_CONFIG, 2048)) {
                    List<Future<RecordMetadata>> fs = new ArrayList<>();
                    for (int i = 0; i < each; i++)
                        fs.add(p.send(new ProducerRecord<>(t, 0, null, Kit.bytes(id + ":" + i))));
                    for (Future<RecordMetadata> f : fs) offsets.add(f.get().offset());
                } catch (Throwable e) {
                    errors.add(e);
                }
            }));
        }
        threads.forEach(Thread::start);
        for (Thread th : threads) th.join();
        assertTrue(errors.isEmpty(), "producer errors: " + errors);
        Set<Long> distinct = new HashSet<>(offsets);
        assertEquals(producers * each, distinct.size(), "distinct offsets");
        for (long o = 0; o < producers * each; o++) assertTrue(distinct.contains(o), "offset " + o + " assigned");
        // each producer's records are in its send order
        int[] next = new int[producers];
        for (ConsumerRecord<byte[], byte[]> c : Kit.readFromStart(List.of(new TopicPartition(t, 0)), producers * each)) {
            String[] v = Kit.str(c.value()).split(":");
            int id = Integer.parseInt(v[0]);
            assertEquals(next[id]++, Integer.parseInt(v[1]), "order of producer " + id);
        }
    }

    @Test
    void log_append_time_topics_stamp_records_with_the_brokers_clock() throws Exception {
        String t = Kit.topic("edge-appendtime");
        try (Admin admin = Kit.admin()) {
            Kit.createTopic(admin, t, 1, Map.of("message.timestamp.type", "LogAppendTime"));
        }
        long before = System.currentTimeMillis();
        RecordMetadata m;
        try (KafkaProducer<byte[], byte[]> p = Kit.producer()) {
            m = p.send(new ProducerRecord<>(t, 0, 1_000L, null, Kit.bytes("old create time"))).get();
        }
        long after = System.currentTimeMillis();
        assertTrue(m.timestamp() >= before - 5000 && m.timestamp() <= after + 5000,
                "acknowledged timestamp " + m.timestamp() + " is the broker's append time, not 1000");
        ConsumerRecord<byte[], byte[]> c = Kit.readFromStart(List.of(new TopicPartition(t, 0)), 1).get(0);
        assertEquals(TimestampType.LOG_APPEND_TIME, c.timestampType());
        assertEquals(m.timestamp(), c.timestamp());
    }

    @ParameterizedTest(name = "compression {0}")
    @ValueSource(strings = {"gzip", "snappy", "lz4", "zstd"})
    void seeking_into_a_compressed_batch_skips_the_records_before_the_offset(String codec) throws Exception {
        String t = Kit.topic("edge-seek-" + codec);
        Kit.createTopic(t, 1);
        TopicPartition tp = new TopicPartition(t, 0);
        try (KafkaProducer<byte[], byte[]> p = Kit.producer(ProducerConfig.COMPRESSION_TYPE_CONFIG, codec,
                ProducerConfig.LINGER_MS_CONFIG, 1000, ProducerConfig.BATCH_SIZE_CONFIG, 1 << 20)) {
            for (int i = 0; i < 100; i++) p.send(new ProducerRecord<>(t, 0, null, Kit.bytes("k" + i), Kit.bytes("value " + i)));
            p.flush();
        }
        try (KafkaConsumer<byte[], byte[]> c = Kit.consumer()) {
            c.assign(List.of(tp));
            c.seek(tp, 63);
            List<ConsumerRecord<byte[], byte[]>> got = Kit.poll(c, 37);
            for (int i = 0; i < 37; i++) {
                assertEquals(63 + i, got.get(i).offset());
                assertArrayEquals(Kit.bytes("value " + (63 + i)), got.get(i).value());
            }
        }
    }

    @Test
    void max_timestamp_and_earliest_local_offsets_of_a_filled_partition() throws Exception {
        String t = Kit.topic("edge-maxts");
        Kit.createTopic(t, 1);
        TopicPartition tp = new TopicPartition(t, 0);
        long t0 = 1_700_000_000_000L;
        try (KafkaProducer<byte[], byte[]> p = Kit.producer()) {
            long[] ts = {t0, t0 + 5000, t0 + 2000, t0 + 9000, t0 + 1000};
            for (long x : ts) p.send(new ProducerRecord<>(t, 0, x, null, Kit.bytes("x"))).get();
        }
        try (Admin admin = Kit.admin()) {
            var r = admin.listOffsets(Map.of(tp, OffsetSpec.maxTimestamp())).partitionResult(tp).get(30, TimeUnit.SECONDS);
            assertEquals(3, r.offset());
            assertEquals(t0 + 9000, r.timestamp());
            assertEquals(0, admin.listOffsets(Map.of(tp, OffsetSpec.earliestLocal())).partitionResult(tp)
                    .get(30, TimeUnit.SECONDS).offset());
            assertEquals(1, admin.listOffsets(Map.of(tp, OffsetSpec.forTimestamp(t0 + 1))).partitionResult(tp)
                    .get(30, TimeUnit.SECONDS).offset(), "first record with timestamp >= t0+1 by offset order");
        }
    }

    @Test
    void describe_configs_of_the_broker() throws Exception {
        try (Admin admin = Kit.admin()) {
            Node n = admin.describeCluster().nodes().get(30, TimeUnit.SECONDS).iterator().next();
            ConfigResource r = new ConfigResource(ConfigResource.Type.BROKER, Integer.toString(n.id()));
            Config c = admin.describeConfigs(List.of(r)).all().get(30, TimeUnit.SECONDS).get(r);
            assertNotNull(c.get("auto.create.topics.enable"), "auto.create.topics.enable described: " + c);
            assertNotNull(c.get("num.partitions"), "num.partitions described");
        }
    }

    @Test
    void producing_to_a_deleted_topic_and_reading_it_fail_or_recreate_cleanly() throws Exception {
        String t = Kit.topic("edge-deleted");
        Kit.createTopic(t, 1);
        try (KafkaProducer<byte[], byte[]> p = Kit.producer()) {
            p.send(new ProducerRecord<>(t, 0, null, Kit.bytes("before"))).get();
        }
        try (Admin admin = Kit.admin()) {
            admin.deleteTopics(List.of(t)).all().get(30, TimeUnit.SECONDS);
            long deadline = System.nanoTime() + Kit.WAIT.toNanos();
            while (admin.listTopics().names().get().contains(t) && System.nanoTime() < deadline) Thread.sleep(100);
            // a new topic of the same name starts empty
            Kit.createTopic(admin, t, 2, null);
        }
        TopicPartition tp = new TopicPartition(t, 0);
        try (KafkaConsumer<byte[], byte[]> c = Kit.consumer()) {
            assertEquals(0L, c.endOffsets(List.of(tp)).get(tp), "recreated topic is empty");
        }
        try (KafkaProducer<byte[], byte[]> p = Kit.producer()) {
            assertEquals(0, p.send(new ProducerRecord<>(t, 1, null, Kit.bytes("after"))).get().offset());
        }
    }

    @Test
    void invalid_topic_names_partition_counts_and_replication_factors_are_refused() throws Exception {
        try (Admin admin = Kit.admin()) {
            for (String bad : List.of("bad name!", "a".repeat(250), ".", "..")) {
                ExecutionException e = assertThrows(ExecutionException.class, () -> admin.createTopics(
                        List.of(new NewTopic(bad, 1, (short) 1))).all().get(30, TimeUnit.SECONDS), "topic name '" + bad + "'");
                assertInstanceOf(InvalidTopicException.class, e.getCause(), "topic name '" + bad + "'");
            }
            String t = Kit.topic("edge-badparts");
            ExecutionException e = assertThrows(ExecutionException.class, () -> admin.createTopics(
                    List.of(new NewTopic(t, 0, (short) 1))).all().get(30, TimeUnit.SECONDS));
            assertInstanceOf(InvalidPartitionsException.class, e.getCause());
            e = assertThrows(ExecutionException.class, () -> admin.createTopics(
                    List.of(new NewTopic(t, 1, (short) 3))).all().get(30, TimeUnit.SECONDS));
            assertInstanceOf(InvalidReplicationFactorException.class, e.getCause());
            assertTrue(!admin.listTopics().names().get().contains(t), "no topic was created");
        }
    }

    @Test
    void create_topics_with_validate_only_creates_nothing() throws Exception {
        String t = Kit.topic("edge-validate");
        try (Admin admin = Kit.admin()) {
            admin.createTopics(List.of(new NewTopic(t, 3, (short) 1)), new CreateTopicsOptions().validateOnly(true))
                    .all().get(30, TimeUnit.SECONDS);
            Thread.sleep(500);
            assertTrue(!admin.listTopics().names().get().contains(t), "validateOnly created " + t);
        }
    }

    @Test
    void producing_to_an_invalid_topic_name_fails_with_InvalidTopic() throws Exception {
        try (KafkaProducer<byte[], byte[]> p = Kit.producer(ProducerConfig.MAX_BLOCK_MS_CONFIG, 10000)) {
            ExecutionException e = assertThrows(ExecutionException.class,
                    () -> p.send(new ProducerRecord<>("bad topic name!", Kit.bytes("x"))).get(30, TimeUnit.SECONDS));
            assertInstanceOf(InvalidTopicException.class, e.getCause());
        }
    }
}
