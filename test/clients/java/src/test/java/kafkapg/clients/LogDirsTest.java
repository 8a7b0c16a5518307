package kafkapg.clients;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.DescribeReplicaLogDirsResult.ReplicaLogDirInfo;
import org.apache.kafka.clients.admin.LogDirDescription;
import org.apache.kafka.clients.admin.ReplicaInfo;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionReplica;
import org.apache.kafka.common.errors.LogDirNotFoundException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.junit.jupiter.api.Test;

/**
 * The log-dir admin APIs on a broker with one log directory: Admin.describeLogDirs and
 * describeReplicaLogDirs (DescribeLogDirs) and alterReplicaLogDirs (AlterReplicaLogDirs), as a
 * single-node Apache Kafka 4.4 answers them: one log dir, every partition in it with the size of its
 * records and no lag, no future replica; moving a replica to the dir it is in succeeds, any other
 * dir is LogDirNotFoundException, an unknown partition UnknownTopicOrPartitionException.
 */
class LogDirsTest {

    private static <T> T get(KafkaFuture<T> f) throws Exception {
        return f.get(30, TimeUnit.SECONDS);
    }

    private static Throwable cause(KafkaFuture<?> f) {
        ExecutionException e = assertThrows(ExecutionException.class, () -> get(f));
        return e.getCause();
    }

    @Test
    void one_log_dir_holds_every_partition_and_a_replica_stays_in_it() throws Exception {
        String t = Kit.topic("logdirs");
        try (Admin admin = Kit.admin()) {
            int node = get(admin.describeCluster().nodes()).iterator().next().id();
            Kit.createTopic(admin, t, 2, null);
            try (KafkaProducer<byte[], byte[]> p = Kit.producer()) {
                for (int i = 0; i < 10; i++) {
                    p.send(new ProducerRecord<>(t, 0, null, Kit.bytes("record-" + i))).get(30, TimeUnit.SECONDS);
                }
            }

            // the partitions' logs may appear a moment after the topic on Kafka
            Map<String, LogDirDescription> dirs = null;
            for (int i = 0; i < 50; i++) {
                dirs = get(admin.describeLogDirs(List.of(node)).allDescriptions()).get(node);
                if (dirs != null && dirs.size() == 1
                        && dirs.values().iterator().next().replicaInfos().containsKey(new TopicPartition(t, 1))) {
                    break;
                }
                Thread.sleep(200);
            }
            assertNotNull(dirs);
            assertEquals(1, dirs.size(), "log dirs " + dirs.keySet());
            String dir = dirs.keySet().iterator().next();
            LogDirDescription d = dirs.get(dir);
            assertTrue(dir.startsWith("/"), "an absolute path: " + dir);
            assertNull(d.error(), "error " + d.error());
            assertTrue(d.totalBytes().isPresent() && d.usableBytes().isPresent(), "volume sizes");
            assertTrue(d.usableBytes().getAsLong() > 0 && d.usableBytes().getAsLong() <= d.totalBytes().getAsLong());
            ReplicaInfo r0 = d.replicaInfos().get(new TopicPartition(t, 0));
            ReplicaInfo r1 = d.replicaInfos().get(new TopicPartition(t, 1));
            assertNotNull(r0, "partition 0 in " + d.replicaInfos().keySet());
            assertNotNull(r1, "partition 1 in " + d.replicaInfos().keySet());
            assertTrue(r0.size() > 0, "10 records take room: " + r0.size());
            assertEquals(0, r1.size(), "nothing produced to partition 1");
            assertEquals(0, r0.offsetLag());
            assertFalse(r0.isFuture());

            TopicPartitionReplica tpr = new TopicPartitionReplica(t, 0, node);
            ReplicaLogDirInfo info = get(admin.describeReplicaLogDirs(List.of(tpr)).values().get(tpr));
            assertEquals(dir, info.getCurrentReplicaLogDir());
            assertNull(info.getFutureReplicaLogDir());
            assertEquals(-1, info.getFutureReplicaOffsetLag());

            get(admin.alterReplicaLogDirs(Map.of(tpr, dir)).all());
            assertInstanceOf(LogDirNotFoundException.class,
                    cause(admin.alterReplicaLogDirs(Map.of(tpr, dir + "-elsewhere")).all()));
            assertInstanceOf(UnknownTopicOrPartitionException.class,
                    cause(admin.alterReplicaLogDirs(Map.of(new TopicPartitionReplica(t, 5, node), dir)).all()));
        }
    }
}
