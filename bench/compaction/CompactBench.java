import java.util.Arrays;
import java.util.Properties;
import java.util.Random;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * The client side of bench/compaction/bench.sh, the same for Apache Kafka and kafka_pg.
 *
 *   java CompactBench fill BOOTSTRAP TOPIC RECORDS KEYS SIZE
 *
 * Writes RECORDS records of SIZE bytes with KEYS distinct keys ("key-%08d") to partition 0 of
 * TOPIC: record i has key (i * 1000003) mod KEYS, so every run of KEYS consecutive records updates
 * every key once (a permutation) and every key has RECORDS / KEYS versions; the values are slices
 * of one seeded random buffer, the same bytes on every run. acks=1, no idempotence, linger.ms 10,
 * batch.size 256 KiB, no compression. Prints "fill records N bytes B seconds S".
 *
 *   java CompactBench load BOOTSTRAP TOPIC SECONDS RATE SIZE KEYS
 *
 * Produces records of SIZE bytes for SECONDS, at RATE records/s (0: as fast as the producer takes
 * them), keys drawn at random (seeded) among KEYS keys ("key-%08d"; KEYS 0: no key, round-robin
 * partitions), acks=all, otherwise the producer's defaults; the clock starts once the producer has
 * the topic's metadata and a first record was acknowledged; the latency of a record is
 * from send() to its acknowledgement. Prints "load records N seconds S records/s R MB/s M
 * p50 A ms p99 B ms max C ms errors E": records sent within SECONDS, over the time until the last
 * of them was acknowledged (with RATE 0 the latency includes the wait in the producer's buffer,
 * so only the throughput means something).
 */
public final class CompactBench {
    public static void main(String[] a) throws Exception {
        if (a.length == 6 && a[0].equals("fill"))
            fill(a[1], a[2], Long.parseLong(a[3]), Integer.parseInt(a[4]), Integer.parseInt(a[5]));
        else if (a.length == 7 && a[0].equals("load"))
            load(a[1], a[2], Double.parseDouble(a[3]), Integer.parseInt(a[4]), Integer.parseInt(a[5]),
                    Integer.parseInt(a[6]));
        else {
            System.err.println("usage: CompactBench fill BOOTSTRAP TOPIC RECORDS KEYS SIZE | load BOOTSTRAP TOPIC SECONDS RATE SIZE KEYS");
            System.exit(2);
        }
    }

    static Properties props(String bootstrap) {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class);
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class);
        return p;
    }

    static void fill(String bootstrap, String topic, long n, int keys, int size) throws Exception {
        Properties pp = props(bootstrap);
        pp.put(ProducerConfig.ACKS_CONFIG, "1");
        pp.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, false);
        pp.put(ProducerConfig.LINGER_MS_CONFIG, 10);
        pp.put(ProducerConfig.BATCH_SIZE_CONFIG, 256 * 1024);
        pp.put(ProducerConfig.BUFFER_MEMORY_CONFIG, 64L * 1024 * 1024);
        byte[] buf = new byte[1 << 20];
        new Random(42).nextBytes(buf);
        AtomicLong failed = new AtomicLong();
        long bytes = 0;
        long t0 = System.nanoTime();
        try (KafkaProducer<byte[], byte[]> p = new KafkaProducer<>(pp)) {
            for (long i = 0; i < n; i++) {
                int k = (int) ((i * 1000003L) % keys);
                byte[] key = String.format("key-%08d", k).getBytes();
                int off = (int) ((i * 131) % (buf.length - size));
                byte[] v = Arrays.copyOfRange(buf, off, off + size);
                bytes += key.length + v.length;
                p.send(new ProducerRecord<>(topic, 0, key, v), (md, e) -> {
                    if (e != null && failed.getAndIncrement() == 0)
                        System.err.println("fill: " + e);
                });
            }
            p.flush();
        }
        double s = (System.nanoTime() - t0) / 1e9;
        if (failed.get() > 0) {
            System.err.println("fill: " + failed.get() + " records failed");
            System.exit(1);
        }
        System.out.printf("fill records %d bytes %d seconds %.2f%n", n, bytes, s);
    }

    static void load(String bootstrap, String topic, double seconds, int rate, int size, int keys) throws Exception {
        Properties pp = props(bootstrap);
        pp.put(ProducerConfig.ACKS_CONFIG, "all");
        byte[] buf = new byte[1 << 20];
        new Random(7).nextBytes(buf);
        Random pick = new Random(11);
        int cap = (int) Math.min(Integer.MAX_VALUE - 8, rate > 0 ? rate * seconds * 1.1 + 1024 : 50_000_000);
        long[] lat = new long[cap];
        AtomicLong acked = new AtomicLong();
        AtomicLong errors = new AtomicLong();
        double s;
        int sent = 0;
        try (KafkaProducer<byte[], byte[]> p = new KafkaProducer<>(pp)) {
            /* connections, metadata and a first acknowledged record before the clock starts */
            p.partitionsFor(topic);
            p.send(new ProducerRecord<>(topic, keys > 0 ? "key-warm".getBytes() : null, new byte[size])).get();
            long t0 = System.nanoTime();
            long end = t0 + (long) (seconds * 1e9);
            for (;;) {
                long now = System.nanoTime();
                if (now >= end || sent >= cap)
                    break;
                if (rate > 0) {
                    long due = (long) ((now - t0) / 1e9 * rate);
                    if (sent >= due) {
                        long wait = t0 + (long) ((sent + 1) * 1e9 / rate) - now;
                        if (wait > 200_000)
                            Thread.sleep(wait / 1_000_000, (int) (wait % 1_000_000));
                        else
                            Thread.onSpinWait();
                        continue;
                    }
                }
                int off = (int) (((long) sent * 131) % (buf.length - size));
                byte[] v = Arrays.copyOfRange(buf, off, off + size);
                final int idx = sent;
                final long start = System.nanoTime();
                byte[] key = keys > 0 ? String.format("key-%08d", pick.nextInt(keys)).getBytes() : null;
                p.send(new ProducerRecord<>(topic, key, v), (md, e) -> {
                    if (e != null)
                        errors.incrementAndGet();
                    lat[idx] = System.nanoTime() - start;
                    acked.incrementAndGet();
                });
                sent++;
            }
            p.flush();
            s = (System.nanoTime() - t0) / 1e9;
        }
        long[] l = Arrays.copyOf(lat, sent);
        Arrays.sort(l);
        double p50 = sent > 0 ? l[(int) Math.min(sent - 1, Math.floor(sent * 0.50))] / 1e6 : 0;
        double p99 = sent > 0 ? l[(int) Math.min(sent - 1, Math.floor(sent * 0.99))] / 1e6 : 0;
        double max = sent > 0 ? l[sent - 1] / 1e6 : 0;
        System.out.printf("load records %d seconds %.2f records/s %.0f MB/s %.2f p50 %.2f ms p99 %.2f ms max %.2f ms errors %d%n",
                sent, s, sent / s, sent * (double) size / s / 1e6, p50, p99, max, errors.get());
    }
}
