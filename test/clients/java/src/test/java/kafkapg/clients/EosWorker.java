package kafkapg.clients;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * A consume-transform-produce process for EosKillTest: reads every partition of the input topic
 * (read_committed, from the group's committed offsets), writes each record to the same partition
 * of the output topic, and commits the group's offsets with the output in one transaction per
 * poll (sendOffsetsToTransaction). It runs until killed; the test kills it with SIGKILL.
 *
 * Partitions are assigned, not subscribed: a restarted process takes over at once instead of
 * waiting for the dead one's group session to expire. Zombies are fenced by the transactional id.
 *
 * Arguments: bootstrap input output group transactional-id
 */
public final class EosWorker {
    private EosWorker() {}

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], in = args[1], out = args[2], group = args[3], txnId = args[4];
        Properties cp = new Properties();
        cp.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        cp.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        cp.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        cp.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        cp.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        cp.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 37);
        cp.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);
        cp.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);
        Properties pp = new Properties();
        pp.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        pp.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, txnId);
        pp.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class);
        pp.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class);
        pp.put(ProducerConfig.LINGER_MS_CONFIG, 5);
        try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(cp);
             KafkaProducer<byte[], byte[]> p = new KafkaProducer<>(pp)) {
            p.initTransactions();
            List<TopicPartition> tps = new ArrayList<>();
            for (PartitionInfo pi : c.partitionsFor(in)) tps.add(new TopicPartition(in, pi.partition()));
            c.assign(tps);
            ConsumerGroupMetadata meta = new ConsumerGroupMetadata(group);
            System.out.println("EosWorker: started, " + tps.size() + " partitions");
            while (true) {
                ConsumerRecords<byte[], byte[]> rs = c.poll(Duration.ofMillis(200));
                if (rs.isEmpty()) continue;
                p.beginTransaction();
                Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
                for (ConsumerRecord<byte[], byte[]> r : rs) {
                    p.send(new ProducerRecord<>(out, r.partition(), r.key(), r.value()));
                    offsets.put(new TopicPartition(in, r.partition()), new OffsetAndMetadata(r.offset() + 1));
                }
                // keep each transaction open a while, so that kills land inside some
                p.flush();
                Thread.sleep(40);
                p.sendOffsetsToTransaction(offsets, meta);
                p.commitTransaction();
            }
        }
    }
}
