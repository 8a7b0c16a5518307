/*
 * Measurements for bench/wire/bench.sh that Kafka's own perf tools cannot make against a broker
 * without consumer groups, made the same way against Apache Kafka and kafka_pg:
 *
 *   consume BOOTSTRAP TOPIC PARTITIONS RECORDS [TIMEOUT_S]
 *       A consumer without a group (assign + seekToBeginning, client defaults) reads RECORDS
 *       records from the start of every partition; prints records/s and MB/s of record values.
 *       Also prints the client's CPU seconds over the measured interval: client_cpu_s (the
 *       whole JVM) and poll_thread_cpu_s (the thread that polls, fetches and parses).
 *       Then a line "closed close_s=S": how long the consumer's close() took (it closes its fetch
 *       session on each broker and waits for the answers).
 *       With -Dwb.tail=true it starts RECORDS/PARTITIONS records before the end of each instead
 *       (from the start of one that has fewer) and reads what is there from those positions.
 *   send BOOTSTRAP TOPIC RECORDS SIZE ACKS BATCH_SIZE LINGER_MS
 *       A producer (null keys, the default partitioner, acks=ACKS, idempotent only for acks=all,
 *       client defaults otherwise, as kafka-producer-perf-test) sends RECORDS/5 records unmeasured
 *       (the JIT's warm-up), then RECORDS records of SIZE bytes as fast as it can, and waits for
 *       every acknowledgement; prints records/s and the client's CPU seconds over the measured
 *       interval: client_cpu_s (the whole JVM), app_thread_cpu_s (the sending thread: serializes
 *       and appends to the batches) and io_thread_cpu_s (the producer's network thread: builds
 *       requests, reads answers), for bench/fetchpath/ceiling.sh's produce ceiling.
 *   produce BOOTSTRAP TOPIC PARTITIONS RECORDS SIZE
 *       A producer (acks=1, no idempotence, batch.size -Dwb.batch_size (16384), linger.ms
 *       -Dwb.linger_ms (1000)) sends RECORDS/PARTITIONS records of SIZE random bytes to partition
 *       0, then as many to partition 1, and so on: every partition's records fill whole batches
 *       whatever the partition count (bench/scale/sweep.sh's "equal" batching; the default
 *       partitioner would decide itself).  Prints records/s and the producer's own batch-size-avg
 *       (bytes) and records-per-request-avg.
 *   e2e BOOTSTRAP TOPIC PARTITIONS RATE SECONDS SIZE
 *       A producer (acks=all, idempotent, linger.ms=0) sends SIZE-byte records at RATE per second
 *       for SECONDS; a group-less consumer (fetch.min.bytes=1) positioned at the end receives them.
 *       Each value starts with its send time (System.nanoTime, one JVM), so end-to-end latency is
 *       receive time minus send time. Before those SECONDS it sends at the same rate, unmeasured,
 *       for -Dwb.warmup_s seconds (1): a new JVM's JIT compiler takes most of a CPU for its first
 *       ~13 s (at 5,000 and at 30,000 records/s), so a short warm-up measures the client's
 *       compiler on a 2-core machine (docs/performance.md, "The acknowledgement tail near
 *       saturation"). Prints percentiles of end-to-end and of send-to-acknowledgement latency
 *       over the measured records. With -Dwb.dump=FILE it also writes every record's send time (System.nanoTime:
 *       CLOCK_MONOTONIC on Linux) and both latencies to FILE, warm-up included, to line the tail
 *       up with a server's own timestamps.
 *
 *   create BOOTSTRAP PARTITIONS TOPIC...   /   delete BOOTSTRAP TOPIC...
 *       Topics for a run, in one JVM (faster than a kafka-topics call per topic). create waits
 *       until ListOffsets answers for every partition, i.e. until the leader serves it.
 *
 * Output: one line of key=value pairs, for bench.sh to parse. Compiled with javac against the jars
 * that test/clients/kafka/fetch-kafka.sh caches.
 */
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.LockSupport;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public class WireBench {
    public static void main(String[] a) throws Exception {
        if (a.length >= 4 && a[0].equals("create"))
            create(a[1], Integer.parseInt(a[2]), Arrays.asList(a).subList(3, a.length));
        else if (a.length >= 3 && a[0].equals("delete"))
            delete(a[1], Arrays.asList(a).subList(2, a.length));
        else if (a.length >= 5 && a[0].equals("consume"))
            consume(a[1], a[2], Integer.parseInt(a[3]), Long.parseLong(a[4]), a.length > 5 ? Integer.parseInt(a[5]) : 300);
        else if (a.length == 8 && a[0].equals("send"))
            send(a[1], a[2], Long.parseLong(a[3]), Integer.parseInt(a[4]), a[5], Integer.parseInt(a[6]), Integer.parseInt(a[7]));
        else if (a.length == 6 && a[0].equals("produce"))
            produce(a[1], a[2], Integer.parseInt(a[3]), Long.parseLong(a[4]), Integer.parseInt(a[5]));
        else if (a.length == 7 && a[0].equals("e2e"))
            e2e(a[1], a[2], Integer.parseInt(a[3]), Integer.parseInt(a[4]), Integer.parseInt(a[5]), Integer.parseInt(a[6]));
        else {
            System.err.println("usage: WireBench create BOOTSTRAP PARTITIONS TOPIC...\n"
                    + "       WireBench delete BOOTSTRAP TOPIC...\n"
                    + "       WireBench consume BOOTSTRAP TOPIC PARTITIONS RECORDS [TIMEOUT_S]\n"
                    + "       WireBench send BOOTSTRAP TOPIC RECORDS SIZE ACKS BATCH_SIZE LINGER_MS\n"
                    + "       WireBench produce BOOTSTRAP TOPIC PARTITIONS RECORDS SIZE\n"
                    + "       WireBench e2e BOOTSTRAP TOPIC PARTITIONS RATE SECONDS SIZE");
            System.exit(2);
        }
    }

    static Admin admin(String bootstrap) {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        return Admin.create(p);
    }

    static void create(String bootstrap, int parts, List<String> topics) throws Exception {
        try (Admin admin = admin(bootstrap)) {
            List<NewTopic> l = new ArrayList<>();
            for (String t : topics) l.add(new NewTopic(t, parts, (short) 1));
            admin.createTopics(l).all().get(60, TimeUnit.SECONDS);
            Map<TopicPartition, OffsetSpec> specs = new HashMap<>();
            for (String t : topics) for (TopicPartition tp : partitions(t, parts)) specs.put(tp, OffsetSpec.latest());
            long deadline = System.nanoTime() + 60_000_000_000L;
            while (true) {
                try {
                    admin.listOffsets(specs).all().get(30, TimeUnit.SECONDS);
                    return;
                } catch (ExecutionException e) {
                    if (System.nanoTime() > deadline) throw e;
                    Thread.sleep(100);
                }
            }
        }
    }

    static void delete(String bootstrap, List<String> topics) throws Exception {
        try (Admin admin = admin(bootstrap)) {
            admin.deleteTopics(topics).all().get(60, TimeUnit.SECONDS);
        }
    }

    static List<TopicPartition> partitions(String topic, int n) {
        List<TopicPartition> l = new ArrayList<>();
        for (int p = 0; p < n; p++) l.add(new TopicPartition(topic, p));
        return l;
    }

    static KafkaConsumer<byte[], byte[]> consumer(String bootstrap, Properties extra) {
        Properties c = new Properties();
        c.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        c.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        c.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        c.putAll(extra);
        return new KafkaConsumer<>(c);
    }

    static KafkaProducer<byte[], byte[]> producer(String bootstrap, Properties extra) {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        p.putAll(extra);
        return new KafkaProducer<>(p);
    }

    static void consume(String bootstrap, String topic, int parts, long records, int timeoutS) {
        KafkaConsumer<byte[], byte[]> c = consumer(bootstrap, new Properties());
        try {
            List<TopicPartition> tps = partitions(topic, parts);
            c.assign(tps);
            if (Boolean.getBoolean("wb.tail")) {
                // the last RECORDS/PARTITIONS records of each partition (bench/scale/sweep.sh), or
                // all of a partition that has fewer: RECORDS becomes what is there to read
                c.seekToEnd(tps);
                long there = 0;
                for (TopicPartition tp : tps) {
                    long end = c.position(tp), from = Math.max(0, end - records / parts);
                    c.seek(tp, from);
                    there += end - from;
                }
                records = there;
            } else
                c.seekToBeginning(tps);
            for (TopicPartition tp : tps) c.position(tp); // resolve offsets before the clock starts
            // the client's own CPU over the measured interval: the whole JVM (GC and JIT threads
            // included) and the thread that polls (the classic consumer fetches, decompresses,
            // checks CRCs and parses records on it)
            ThreadMXBean threads = ManagementFactory.getThreadMXBean();
            com.sun.management.OperatingSystemMXBean os =
                    (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
            long cpu0 = os.getProcessCpuTime(), poll0 = threads.getCurrentThreadCpuTime();
            long n = 0, bytes = 0, start = System.nanoTime(), deadline = start + timeoutS * 1_000_000_000L;
            while (n < records && System.nanoTime() < deadline) {
                for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(500))) {
                    n++;
                    if (r.value() != null) bytes += r.value().length;
                }
            }
            double s = (System.nanoTime() - start) / 1e9;
            double cpu = (os.getProcessCpuTime() - cpu0) / 1e9, poll = (threads.getCurrentThreadCpuTime() - poll0) / 1e9;
            System.out.printf("consume records=%d bytes=%d seconds=%.3f records_per_sec=%.1f mb_per_sec=%.2f complete=%s"
                    + " client_cpu_s=%.3f poll_thread_cpu_s=%.3f%n",
                    n, bytes, s, n / s, bytes / s / (1024 * 1024), n >= records, cpu, poll);
        } finally {
            // close() ends the fetch session and waits for the broker's answer to that
            long t = System.nanoTime();
            c.close();
            System.out.printf("closed close_s=%.3f%n", (System.nanoTime() - t) / 1e9);
        }
    }

    /* CPU time of the producer's network threads (named kafka-producer-network-thread | ...) */
    static long ioThreadsCpu(ThreadMXBean threads) {
        long t = 0;
        for (java.lang.management.ThreadInfo i : threads.getThreadInfo(threads.getAllThreadIds()))
            if (i != null && i.getThreadName().startsWith("kafka-producer-network-thread"))
                t += Math.max(0, threads.getThreadCpuTime(i.getThreadId()));
        return t;
    }

    static void send(String bootstrap, String topic, long records, int size, String acks, int batchSize,
            int lingerMs) throws Exception {
        Properties p = new Properties();
        p.put(ProducerConfig.ACKS_CONFIG, acks);
        p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, acks.equals("all") ? "true" : "false");
        p.put(ProducerConfig.BATCH_SIZE_CONFIG, Integer.toString(batchSize));
        p.put(ProducerConfig.LINGER_MS_CONFIG, Integer.toString(lingerMs));
        byte[] value = new byte[size];
        new java.util.Random(42).nextBytes(value);
        java.util.concurrent.atomic.AtomicLong failed = new java.util.concurrent.atomic.AtomicLong();
        try (KafkaProducer<byte[], byte[]> pr = producer(bootstrap, p)) {
            for (long i = 0; i < records / 5; i++)  // warm-up, not measured
                pr.send(new ProducerRecord<>(topic, null, value), (md, e) -> { if (e != null) failed.incrementAndGet(); });
            pr.flush();
            ThreadMXBean threads = ManagementFactory.getThreadMXBean();
            com.sun.management.OperatingSystemMXBean os =
                    (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
            long cpu0 = os.getProcessCpuTime(), app0 = threads.getCurrentThreadCpuTime(), io0 = ioThreadsCpu(threads);
            long start = System.nanoTime();
            for (long i = 0; i < records; i++)
                pr.send(new ProducerRecord<>(topic, null, value), (md, e) -> { if (e != null) failed.incrementAndGet(); });
            pr.flush();
            double s = (System.nanoTime() - start) / 1e9;
            double cpu = (os.getProcessCpuTime() - cpu0) / 1e9, app = (threads.getCurrentThreadCpuTime() - app0) / 1e9,
                    io = (ioThreadsCpu(threads) - io0) / 1e9;
            System.out.printf("send records=%d bytes=%d seconds=%.3f records_per_sec=%.1f mb_per_sec=%.2f complete=%s"
                    + " client_cpu_s=%.3f app_thread_cpu_s=%.3f io_thread_cpu_s=%.3f%n",
                    records, records * size, s, records / s, records * size / s / (1024 * 1024), failed.get() == 0,
                    cpu, app, io);
        }
    }

    static void produce(String bootstrap, String topic, int parts, long records, int size) throws Exception {
        Properties pp = new Properties();
        pp.put(ProducerConfig.ACKS_CONFIG, "1");
        pp.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "false");
        pp.put(ProducerConfig.BATCH_SIZE_CONFIG, System.getProperty("wb.batch_size", "16384"));
        pp.put(ProducerConfig.LINGER_MS_CONFIG, System.getProperty("wb.linger_ms", "1000"));
        // random letters, as kafka-producer-perf-test sends
        byte[] v = new byte[size];
        java.util.Random rnd = new java.util.Random();
        for (int i = 0; i < size; i++) v[i] = (byte) ('A' + rnd.nextInt(26));
        long each = records / parts;
        long[] errors = {0};
        try (KafkaProducer<byte[], byte[]> p = producer(bootstrap, pp)) {
            p.partitionsFor(topic); // metadata before the clock starts
            long start = System.nanoTime();
            for (int part = 0; part < parts; part++)
                for (long i = 0; i < each; i++)
                    p.send(new ProducerRecord<>(topic, part, null, v), (m, e) -> {
                        if (e != null) errors[0]++;
                    });
            p.flush();
            double s = (System.nanoTime() - start) / 1e9;
            double batch = 0, perRequest = 0;
            for (Map.Entry<org.apache.kafka.common.MetricName, ? extends org.apache.kafka.common.Metric> m : p.metrics().entrySet()) {
                if (!m.getKey().group().equals("producer-metrics")) continue;
                if (m.getKey().name().equals("batch-size-avg")) batch = (Double) m.getValue().metricValue();
                if (m.getKey().name().equals("records-per-request-avg")) perRequest = (Double) m.getValue().metricValue();
            }
            System.out.printf("produce records=%d errors=%d seconds=%.3f records_per_sec=%.1f batch_size_avg=%.1f records_per_request_avg=%.1f%n",
                    each * parts, errors[0], s, each * parts / s, batch, perRequest);
        }
    }

    static double pct(long[] sorted, double p) {
        if (sorted.length == 0) return Double.NaN;
        int i = (int) Math.ceil(p / 100.0 * sorted.length) - 1;
        return sorted[Math.max(0, Math.min(sorted.length - 1, i))] / 1e6;
    }

    static void e2e(String bootstrap, String topic, int parts, int rate, int seconds, int size) throws Exception {
        int warm = rate * Integer.parseInt(System.getProperty("wb.warmup_s", "1")), total = warm + rate * seconds;
        long[] e2e = new long[total], ack = new long[total], sentAt = new long[total];
        Arrays.fill(e2e, -1);
        Arrays.fill(ack, -1);
        Properties cp = new Properties();
        cp.put(ConsumerConfig.FETCH_MIN_BYTES_CONFIG, "1");
        Properties pp = new Properties();
        pp.put(ProducerConfig.ACKS_CONFIG, "all");
        pp.put(ProducerConfig.LINGER_MS_CONFIG, "0");
        AtomicBoolean done = new AtomicBoolean();
        long[] received = {0};
        try (KafkaConsumer<byte[], byte[]> c = consumer(bootstrap, cp);
             KafkaProducer<byte[], byte[]> p = producer(bootstrap, pp)) {
            List<TopicPartition> tps = partitions(topic, parts);
            c.assign(tps);
            c.seekToEnd(tps);
            for (TopicPartition tp : tps) c.position(tp);
            p.partitionsFor(topic); // metadata before the clock starts
            Thread reader = new Thread(() -> {
                while (!done.get()) {
                    for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(100))) {
                        long now = System.nanoTime();
                        ByteBuffer b = ByteBuffer.wrap(r.value());
                        int i = b.getInt(8);
                        if (i >= 0 && i < total && e2e[i] < 0) {
                            e2e[i] = now - b.getLong(0);
                            received[0]++;
                        }
                    }
                }
            });
            reader.start();
            long start = System.nanoTime(), interval = 1_000_000_000L / rate;
            for (int i = 0; i < total; i++) {
                long due = start + i * interval;
                long wait;
                while ((wait = due - System.nanoTime()) > 0) LockSupport.parkNanos(Math.min(wait, 200_000));
                byte[] v = new byte[Math.max(size, 12)];
                long sent = System.nanoTime();
                sentAt[i] = sent;
                ByteBuffer.wrap(v).putLong(0, sent).putInt(8, i);
                final int idx = i;
                p.send(new ProducerRecord<>(topic, v), (m, e) -> {
                    if (e == null) ack[idx] = System.nanoTime() - sent;
                });
            }
            p.flush();
            long deadline = System.nanoTime() + 30_000_000_000L;
            while (received[0] < total && System.nanoTime() < deadline) Thread.sleep(50);
            done.set(true);
            reader.join();
            double elapsed = (System.nanoTime() - start) / 1e9;
            long[] e = Arrays.stream(e2e, warm, total).filter(x -> x >= 0).sorted().toArray();
            long[] k = Arrays.stream(ack, warm, total).filter(x -> x >= 0).sorted().toArray();
            System.out.printf("e2e sent=%d received=%d warmup=%d rate=%d seconds=%.1f e2e_p50_ms=%.2f e2e_p99_ms=%.2f e2e_p999_ms=%.2f e2e_max_ms=%.2f ack_p50_ms=%.2f ack_p99_ms=%.2f%n",
                    total, received[0], warm, rate, elapsed, pct(e, 50), pct(e, 99), pct(e, 99.9), pct(e, 100), pct(k, 50), pct(k, 99));
            String dump = System.getProperty("wb.dump");
            if (dump != null) {
                // one line per record: index, send time (System.nanoTime, which is CLOCK_MONOTONIC
                // on Linux, so comparable with a server's timestamps on the same machine), then
                // send-to-acknowledgement and send-to-receive in ns (-1: none)
                try (java.io.PrintWriter w = new java.io.PrintWriter(dump)) {
                    for (int i = 0; i < total; i++) w.println(i + " " + sentAt[i] + " " + ack[i] + " " + e2e[i]);
                }
            }
        }
    }
}
