package kafkapg.clients;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.Future;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.common.utils.Utils;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Producer: what is sent comes back byte for byte, at the offsets the broker acknowledged. */
class ProducerTest {

    /** Sends the records, waits for each acknowledgement, reads them back and compares everything. */
    static void roundTrip(String topic, int partitions, List<ProducerRecord<byte[], byte[]>> records,
                          Object... producerConfig) throws Exception {
        List<RecordMetadata> acks = new ArrayList<>();
        try (KafkaProducer<byte[], byte[]> p = Kit.producer(producerConfig)) {
            List<Future<RecordMetadata>> fs = new ArrayList<>();
            for (ProducerRecord<byte[], byte[]> r : records) fs.add(p.send(r));
            p.flush();
            for (Future<RecordMetadata> f : fs) acks.add(f.get());
        }
        List<ConsumerRecord<byte[], byte[]>> got = Kit.readFromStart(Kit.partitions(topic, partitions), records.size());
        Map<String, ConsumerRecord<byte[], byte[]>> byPosition = new HashMap<>();
        for (ConsumerRecord<byte[], byte[]> c : got) byPosition.put(c.partition() + "@" + c.offset(), c);
        assertEquals(records.size(), byPosition.size(), "distinct (partition, offset) read");
        for (int i = 0; i < records.size(); i++) {
            ProducerRecord<byte[], byte[]> r = records.get(i);
            RecordMetadata m = acks.get(i);
            ConsumerRecord<byte[], byte[]> c = byPosition.get(m.partition() + "@" + m.offset());
            assertTrue(c != null, "record " + i + " acknowledged at " + m + " was not read back");
            if (r.partition() != null) assertEquals(r.partition().intValue(), c.partition());
            assertArrayEquals(r.key(), c.key(), "key of record " + i);
            assertArrayEquals(r.value(), c.value(), "value of record " + i);
            assertEquals(TimestampType.CREATE_TIME, c.timestampType());
            assertEquals(m.timestamp(), c.timestamp(), "timestamp of record " + i);
            if (r.timestamp() != null) assertEquals(r.timestamp().longValue(), c.timestamp());
            Header[] want = r.headers().toArray(), have = c.headers().toArray();
            assertEquals(want.length, have.length, "header count of record " + i);
            for (int h = 0; h < want.length; h++) {
                assertEquals(want[h].key(), have[h].key());
                assertArrayEquals(want[h].value(), have[h].value(), "header " + want[h].key() + " of record " + i);
            }
            assertEquals(r.key() == null ? -1 : r.key().length, c.serializedKeySize());
            assertEquals(r.value() == null ? -1 : r.value().length, c.serializedValueSize());
        }
        // within a partition, offsets follow send order (one producer, idempotent or acks with retries
        // in order) and have no gaps
        Map<Integer, Long> next = new HashMap<>();
        for (RecordMetadata m : acks) {
            Long want = next.get(m.partition());
            if (want != null) assertEquals(want.longValue(), m.offset(), "offset in partition " + m.partition());
            next.put(m.partition(), m.offset() + 1);
        }
    }

    static List<ProducerRecord<byte[], byte[]>> mixedRecords(String topic, int n, long seed) {
        Random rnd = new Random(seed);
        List<ProducerRecord<byte[], byte[]>> l = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            byte[] key = i % 3 == 0 ? null : Kit.bytes("key-" + (i % 17));
            byte[] value;
            switch (i % 5) {
                case 0: value = Kit.bytes(("compressible value " + i + " ").repeat(20)); break;
                case 1: value = new byte[rnd.nextInt(2000)]; rnd.nextBytes(value); break;
                case 2: value = new byte[0]; break;
                case 3: value = null; break;
                default: value = Kit.bytes("v" + i);
            }
            List<Header> headers = new ArrayList<>();
            if (i % 2 == 0) {
                headers.add(new RecordHeader("h1", Kit.bytes("hv" + i)));
                headers.add(new RecordHeader("h-empty", new byte[0]));
                headers.add(new RecordHeader("h-null", (byte[]) null));
                headers.add(new RecordHeader("h1", Kit.bytes("duplicate key")));
            }
            l.add(new ProducerRecord<>(topic, null, null, key, value, headers));
        }
        return l;
    }

    @Test
    void default_producer_is_idempotent_and_round_trips_keyed_and_unkeyed_records_with_headers() throws Exception {
        String t = Kit.topic("prod-default");
        Kit.createTopic(t, 3);
        roundTrip(t, 3, mixedRecords(t, 300, 1));
    }

    @Test
    void explicit_partitions_timestamps_and_binary_keys() throws Exception {
        String t = Kit.topic("prod-explicit");
        Kit.createTopic(t, 4);
        long ts = 1_600_000_000_000L;
        List<ProducerRecord<byte[], byte[]>> l = new ArrayList<>();
        for (int i = 0; i < 40; i++) {
            byte[] key = new byte[] {0, (byte) 0xff, (byte) i, 0, (byte) 0x80};
            l.add(new ProducerRecord<>(t, i % 4, ts + i * 1000L, key, new byte[] {(byte) i, 0, (byte) 0xfe}));
        }
        roundTrip(t, 4, l);
    }

    @ParameterizedTest(name = "compression {0}")
    @ValueSource(strings = {"none", "gzip", "snappy", "lz4", "zstd"})
    void every_compression_codec_round_trips(String codec) throws Exception {
        String t = Kit.topic("prod-" + codec);
        Kit.createTopic(t, 2);
        // linger so that many records share a compressed batch
        roundTrip(t, 2, mixedRecords(t, 500, codec.hashCode()),
                ProducerConfig.COMPRESSION_TYPE_CONFIG, codec, ProducerConfig.LINGER_MS_CONFIG, 50,
                ProducerConfig.BATCH_SIZE_CONFIG, 64 * 1024);
    }

    @ParameterizedTest(name = "acks={0}")
    @ValueSource(strings = {"0", "1", "all", "-1"})
    void every_acks_setting_delivers(String acks) throws Exception {
        String t = Kit.topic("prod-acks" + acks.replace("-", "m"));
        Kit.createTopic(t, 1);
        boolean idempotent = acks.equals("all") || acks.equals("-1");
        int n = 200;
        List<RecordMetadata> ms = new ArrayList<>();
        try (KafkaProducer<byte[], byte[]> p = Kit.producer(ProducerConfig.ACKS_CONFIG, acks,
                ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, idempotent)) {
            List<Future<RecordMetadata>> fs = new ArrayList<>();
            for (int i = 0; i < n; i++) fs.add(p.send(new ProducerRecord<>(t, Kit.bytes("k" + i), Kit.bytes("v" + i))));
            p.flush();
            for (Future<RecordMetadata> f : fs) ms.add(f.get());
        }
        if (acks.equals("0")) {
            // no response: the client cannot know the offsets
            for (RecordMetadata m : ms) assertEquals(-1, m.offset());
        } else {
            for (int i = 0; i < n; i++) assertEquals(i, ms.get(i).offset());
        }
        List<ConsumerRecord<byte[], byte[]>> got = Kit.readFromStart(List.of(new TopicPartition(t, 0)), n);
        for (int i = 0; i < n; i++) {
            assertEquals(i, got.get(i).offset());
            assertEquals("k" + i, Kit.str(got.get(i).key()));
            assertEquals("v" + i, Kit.str(got.get(i).value()));
        }
    }

    @Test
    void idempotent_producer_with_many_batches_in_flight_keeps_order_without_gaps_or_duplicates() throws Exception {
        String t = Kit.topic("prod-inflight");
        Kit.createTopic(t, 2);
        int n = 5000;
        List<ProducerRecord<byte[], byte[]>> l = new ArrayList<>();
        for (int i = 0; i < n; i++) l.add(new ProducerRecord<>(t, i % 2, null, Kit.bytes(String.format("%08d", i))));
        // small batches, five in flight per connection
        roundTrip(t, 2, l, ProducerConfig.BATCH_SIZE_CONFIG, 1024, ProducerConfig.LINGER_MS_CONFIG, 0,
                ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, 5);
    }

    @Test
    void key_placement_matches_the_default_partitioner_murmur2() throws Exception {
        String t = Kit.topic("prod-murmur");
        int n = 7;
        Kit.createTopic(t, n);
        List<ProducerRecord<byte[], byte[]>> l = new ArrayList<>();
        for (int i = 0; i < 200; i++) l.add(new ProducerRecord<>(t, Kit.bytes("user-" + i), Kit.bytes("v" + i)));
        List<RecordMetadata> ms = new ArrayList<>();
        try (KafkaProducer<byte[], byte[]> p = Kit.producer()) {
            for (ProducerRecord<byte[], byte[]> r : l) ms.add(p.send(r).get());
        }
        for (int i = 0; i < l.size(); i++)
            assertEquals(Utils.toPositive(Utils.murmur2(l.get(i).key())) % n, ms.get(i).partition(),
                    "partition of key user-" + i);
        // the records are where the broker said they are
        for (ConsumerRecord<byte[], byte[]> c : Kit.readFromStart(Kit.partitions(t, n), l.size()))
            assertEquals(Utils.toPositive(Utils.murmur2(c.key())) % n, c.partition(), "key " + Kit.str(c.key()));
        // Kafka's own test vectors (MurmurHash2 in Utils)
        assertEquals(-973932308, Utils.murmur2(Kit.bytes("21")));
        assertEquals(479470107, Utils.murmur2(Kit.bytes("abc")));
    }

    @Test
    void sending_to_an_unknown_topic_auto_creates_it() throws Exception {
        String t = Kit.topic("prod-auto");
        RecordMetadata m;
        try (KafkaProducer<byte[], byte[]> p = Kit.producer()) {
            m = p.send(new ProducerRecord<>(t, Kit.bytes("k"), Kit.bytes("auto"))).get();
        }
        assertEquals(0, m.offset());
        try (Admin admin = Kit.admin()) {
            assertTrue(admin.listTopics().names().get().contains(t), "auto-created topic listed");
        }
        ConsumerRecord<byte[], byte[]> c = Kit.readFromStart(List.of(new TopicPartition(t, m.partition())), 1).get(0);
        assertEquals("auto", Kit.str(c.value()));
    }

    @Test
    void large_records_round_trip() throws Exception {
        String t = Kit.topic("prod-large");
        Kit.createTopic(t, 1);
        Random rnd = new Random(7);
        List<ProducerRecord<byte[], byte[]>> l = new ArrayList<>();
        for (int size : new int[] {100_000, 500_000, 900_000}) {
            byte[] v = new byte[size];
            rnd.nextBytes(v);
            l.add(new ProducerRecord<>(t, 0, null, Kit.bytes("big" + size), v));
        }
        roundTrip(t, 1, l);
    }

    @Test
    void a_null_key_and_a_null_value_tombstone_round_trip() throws Exception {
        String t = Kit.topic("prod-null");
        Kit.createTopic(t, 1);
        roundTrip(t, 1, List.of(new ProducerRecord<byte[], byte[]>(t, 0, (Long) null, null, null),
                new ProducerRecord<byte[], byte[]>(t, 0, (Long) null, Kit.bytes("tomb"), null)));
        ConsumerRecord<byte[], byte[]> c = Kit.readFromStart(List.of(new TopicPartition(t, 0)), 2).get(1);
        assertNull(c.value());
    }
}
