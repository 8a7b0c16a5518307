import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * An exactly-once pipeline, measured: N records of S bytes are written to an input topic of P
 * partitions (idempotent, not timed); then one consume-transform-produce loop reads them
 * read_committed (assign, the group's offsets through the transaction) and, per poll (at most
 * max.poll.records), begins a transaction, sends each record transformed (the value reversed) to
 * the same partition of an output topic, sendOffsetsToTransaction, commitTransaction. Timed from
 * the first poll that returns records to the commit of the last one. Then the output is counted
 * read_committed (must be N).
 *
 *   java EosBench BOOTSTRAP RECORDS SIZE PARTITIONS MAX_POLL_RECORDS
 *
 * Prints one line: "eos records/s R txn/s T commit p50 A ms p99 B ms output N".
 */
public final class EosBench {
    public static void main(String[] a) throws Exception {
        String bootstrap = a[0];
        int n = Integer.parseInt(a[1]), size = Integer.parseInt(a[2]), parts = Integer.parseInt(a[3]);
        int maxPoll = Integer.parseInt(a[4]);
        String id = Long.toHexString(System.nanoTime());
        String in = "eosb-in-" + id, out = "eosb-out-" + id, group = "eosb-g-" + id;
        Properties ap = new Properties();
        ap.put("bootstrap.servers", bootstrap);
        try (Admin admin = Admin.create(ap)) {
            admin.createTopics(List.of(new NewTopic(in, parts, (short) 1), new NewTopic(out, parts, (short) 1)))
                    .all().get(60, TimeUnit.SECONDS);
        }
        Properties pp = new Properties();
        pp.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        pp.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class);
        pp.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class);
        pp.put(ProducerConfig.LINGER_MS_CONFIG, 5);
        byte[] v = new byte[size];
        Arrays.fill(v, (byte) 'x');
        try (KafkaProducer<byte[], byte[]> p = new KafkaProducer<>(pp)) {
            for (int i = 0; i < n; i++) {
                byte[] r = v.clone();
                byte[] k = Integer.toString(i).getBytes();
                System.arraycopy(k, 0, r, 0, Math.min(k.length, r.length));
                p.send(new ProducerRecord<>(in, i % parts, null, r));
            }
        }

        Properties cp = new Properties();
        cp.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        cp.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        cp.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        cp.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        cp.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        cp.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, maxPoll);
        cp.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);
        cp.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);
        Properties tp = new Properties();
        tp.putAll(pp);
        tp.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, "eosb-tx-" + id);
        List<Long> commits = new ArrayList<>();
        long t0 = 0, t1 = 0;
        int done = 0, txns = 0;
        try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(cp);
             KafkaProducer<byte[], byte[]> p = new KafkaProducer<>(tp)) {
            p.initTransactions();
            List<TopicPartition> tps = new ArrayList<>();
            for (int i = 0; i < parts; i++) tps.add(new TopicPartition(in, i));
            c.assign(tps);
            ConsumerGroupMetadata meta = new ConsumerGroupMetadata(group);
            long deadline = System.currentTimeMillis() + 600_000;
            while (done < n && System.currentTimeMillis() < deadline) {
                ConsumerRecords<byte[], byte[]> rs = c.poll(Duration.ofMillis(500));
                if (rs.isEmpty()) continue;
                if (t0 == 0) t0 = System.nanoTime();
                p.beginTransaction();
                Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
                for (ConsumerRecord<byte[], byte[]> r : rs) {
                    byte[] val = r.value().clone();
                    for (int i = 0, j = val.length - 1; i < j; i++, j--) { byte x = val[i]; val[i] = val[j]; val[j] = x; }
                    p.send(new ProducerRecord<>(out, r.partition(), r.key(), val));
                    offsets.put(new TopicPartition(in, r.partition()), new OffsetAndMetadata(r.offset() + 1));
                }
                p.sendOffsetsToTransaction(offsets, meta);
                long c0 = System.nanoTime();
                p.commitTransaction();
                commits.add(System.nanoTime() - c0);
                done += rs.count();
                txns++;
            }
            t1 = System.nanoTime();
        }
        // the output, read_committed
        long outN = 0;
        cp.put(ConsumerConfig.GROUP_ID_CONFIG, group + "-check");
        cp.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 5000);
        try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(cp)) {
            List<TopicPartition> tps = new ArrayList<>();
            for (int i = 0; i < parts; i++) tps.add(new TopicPartition(out, i));
            c.assign(tps);
            long deadline = System.currentTimeMillis() + 60_000;
            while (outN < n && System.currentTimeMillis() < deadline) outN += c.poll(Duration.ofMillis(500)).count();
        }
        double secs = (t1 - t0) / 1e9;
        commits.sort(null);
        double p50 = commits.isEmpty() ? 0 : commits.get(commits.size() / 2) / 1e6;
        double p99 = commits.isEmpty() ? 0 : commits.get(Math.min(commits.size() - 1, (int) (commits.size() * 0.99))) / 1e6;
        System.out.printf("eos records/s %.0f txn/s %.1f commit p50 %.1f ms p99 %.1f ms output %d of %d%n",
                done / secs, txns / secs, p50, p99, outN, n);
        try (Admin admin = Admin.create(ap)) {
            admin.deleteTopics(List.of(in, out)).all().get(60, TimeUnit.SECONDS);
        } catch (Exception e) {
            // left behind: harmless
        }
    }
}
