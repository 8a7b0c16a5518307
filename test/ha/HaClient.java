import java.io.File;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Collection;
import java.util.Map;
import java.util.Properties;
import java.util.Random;
import java.util.regex.Pattern;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * The Java (kafka-clients) side of test/ha/failover.py and bench/failover: an idempotent acks=all
 * producer, or a consumer group member that processes (notes, fsyncs) then commits synchronously.
 * It writes one JSON line per event, in the format test/crash/fault_loop.py's checks read:
 * {"t":"ack","p":P,"o":O,"v":V,"ts":MS}, {"t":"nack",...}, {"t":"proc","p":P,"o":O,"v":V},
 * {"t":"commit","p":P,"o":O}, {"t":"commitfail","msg":M}. It runs until STOPFILE exists.
 *
 * Usage: HaClient produce BOOTSTRAP TOPIC LABEL OUTFILE STOPFILE [RATE]
 *        HaClient consume BOOTSTRAP TOPIC GROUP OUTFILE STOPFILE
 */
public final class HaClient {
    private HaClient() {}

    private static final Pattern QUOTE = Pattern.compile("[\"\\\\]");

    static String q(String s) {
        return "\"" + QUOTE.matcher(s.replace('\n', ' ')).replaceAll("'") + "\"";
    }

    static final class Out {
        private final FileOutputStream fos;
        private final Writer w;

        Out(String path) throws IOException {
            fos = new FileOutputStream(path, true);
            w = new OutputStreamWriter(fos, StandardCharsets.UTF_8);
        }

        synchronized void line(String s) {
            try {
                w.write(s);
                w.write('\n');
                w.flush();
            } catch (IOException e) {
                throw new RuntimeException(e);
            }
        }

        synchronized void sync() throws IOException {
            w.flush();
            fos.getFD().sync();
        }
    }

    public static void main(String[] args) throws Exception {
        if (args.length >= 6 && args[0].equals("produce")) {
            produce(args[1], args[2], args[3], args[4], args[5], args.length > 6 ? Integer.parseInt(args[6]) : 200);
        } else if (args.length >= 6 && args[0].equals("consume")) {
            consume(args[1], args[2], args[3], args[4], args[5]);
        } else {
            System.err.println("usage: HaClient produce|consume ...");
            System.exit(2);
        }
    }

    static void produce(String bootstrap, String topic, String label, String path, String stop, int rate)
            throws Exception {
        Out out = new Out(path);
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("enable.idempotence", "true");
        p.put("acks", "all");
        p.put("linger.ms", "5");
        p.put("delivery.timeout.ms", "600000");
        p.put("retries", String.valueOf(Integer.MAX_VALUE));
        p.put("retry.backoff.ms", "100");
        p.put("reconnect.backoff.max.ms", "1000");
        p.put("key.serializer", ByteArraySerializer.class.getName());
        p.put("value.serializer", ByteArraySerializer.class.getName());
        Random rnd = new Random(label.hashCode());
        File stopFile = new File(stop);
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p)) {
            long n = 0;
            long start = System.nanoTime();
            while (!stopFile.exists()) {
                n++;
                final String v = label + "-" + n;
                StringBuilder body = new StringBuilder(v);
                int pad = 10 + rnd.nextInt(390);
                for (int i = 0; i < pad; i++) {
                    body.append('.');
                }
                byte[] key = ("k" + rnd.nextInt(1000)).getBytes(StandardCharsets.UTF_8);
                try {
                    producer.send(new ProducerRecord<>(topic, key, body.toString().getBytes(StandardCharsets.UTF_8)),
                            (md, e) -> {
                                long ts = System.currentTimeMillis();
                                if (e == null) {
                                    out.line("{\"t\":\"ack\",\"p\":" + md.partition() + ",\"o\":" + md.offset()
                                            + ",\"v\":" + q(v) + ",\"ts\":" + ts + "}");
                                } else {
                                    out.line("{\"t\":\"nack\",\"v\":" + q(v) + ",\"msg\":" + q(e.toString())
                                            + ",\"ts\":" + ts + "}");
                                }
                            });
                } catch (RuntimeException e) {
                    // a producer in a fatal state: note it once a second, keep the process alive
                    out.line("{\"t\":\"fatal\",\"msg\":" + q(e.toString()) + "}");
                    Thread.sleep(1000);
                }
                // pace: RATE records per second
                long due = start + n * 1_000_000_000L / rate;
                long wait = due - System.nanoTime();
                if (wait > 0) {
                    Thread.sleep(wait / 1_000_000, (int) (wait % 1_000_000));
                }
            }
            producer.flush();
        }
    }

    static void consume(String bootstrap, String topic, String group, String path, String stop) throws Exception {
        Out out = new Out(path);
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("group.id", group);
        p.put("enable.auto.commit", "false");
        p.put("auto.offset.reset", "earliest");
        p.put("isolation.level", "read_committed");
        p.put("session.timeout.ms", "10000");
        p.put("heartbeat.interval.ms", "1000");
        p.put("reconnect.backoff.max.ms", "1000");
        p.put("key.deserializer", ByteArrayDeserializer.class.getName());
        p.put("value.deserializer", ByteArrayDeserializer.class.getName());
        File stopFile = new File(stop);
        try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(p)) {
            c.subscribe(java.util.List.of(topic), new ConsumerRebalanceListener() {
                @Override
                public void onPartitionsRevoked(Collection<TopicPartition> parts) {}

                @Override
                public void onPartitionsAssigned(Collection<TopicPartition> parts) {}
            });
            while (!stopFile.exists()) {
                ConsumerRecords<byte[], byte[]> recs;
                try {
                    recs = c.poll(Duration.ofMillis(500));
                } catch (RuntimeException e) {
                    out.line("{\"t\":\"pollfail\",\"msg\":" + q(e.toString()) + "}");
                    Thread.sleep(200);
                    continue;
                }
                if (recs.isEmpty()) {
                    continue;
                }
                for (ConsumerRecord<byte[], byte[]> r : recs) {
                    String v = new String(r.value(), StandardCharsets.UTF_8);
                    int dot = v.indexOf('.');
                    if (dot >= 0) {
                        v = v.substring(0, dot);
                    }
                    out.line("{\"t\":\"proc\",\"p\":" + r.partition() + ",\"o\":" + r.offset() + ",\"v\":" + q(v) + "}");
                }
                out.sync();
                Map<TopicPartition, OffsetAndMetadata> offsets = new java.util.HashMap<>();
                for (TopicPartition tp : recs.partitions()) {
                    java.util.List<ConsumerRecord<byte[], byte[]>> l = recs.records(tp);
                    offsets.put(tp, new OffsetAndMetadata(l.get(l.size() - 1).offset() + 1));
                }
                try {
                    c.commitSync(offsets, Duration.ofSeconds(30));
                    for (Map.Entry<TopicPartition, OffsetAndMetadata> e : offsets.entrySet()) {
                        out.line("{\"t\":\"commit\",\"p\":" + e.getKey().partition() + ",\"o\":" + e.getValue().offset() + "}");
                    }
                } catch (RuntimeException e) {
                    out.line("{\"t\":\"commitfail\",\"msg\":" + q(e.toString()) + "}");
                }
            }
        }
    }
}
