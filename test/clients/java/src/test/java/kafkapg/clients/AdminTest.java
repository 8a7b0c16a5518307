package kafkapg.clients;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.DeletedRecords;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.clients.admin.ListTopicsOptions;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.InvalidPartitionsException;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.junit.jupiter.api.Test;

/** AdminClient: topics, partitions, configs, records, cluster. */
class AdminTest {

    private static <T> T get(org.apache.kafka.common.KafkaFuture<T> f) throws Exception {
        return f.get(30, TimeUnit.SECONDS);
    }

    @Test
    void create_describe_list_and_delete_a_topic() throws Exception {
        String t = Kit.topic("admin-crud");
        try (Admin admin = Kit.admin()) {
            Kit.createTopic(admin, t, 3, null);

            TopicDescription d = get(admin.describeTopics(List.of(t)).allTopicNames()).get(t);
            assertEquals(t, d.name());
            assertFalse(d.isInternal());
            assertEquals(3, d.partitions().size());
            for (int p = 0; p < 3; p++) {
                assertEquals(p, d.partitions().get(p).partition());
                assertNotNull(d.partitions().get(p).leader(), "leader of partition " + p);
                assertEquals(1, d.partitions().get(p).replicas().size());
                assertEquals(1, d.partitions().get(p).isr().size());
            }
            assertNotNull(d.topicId());

            Set<String> names = get(admin.listTopics().names());
            assertTrue(names.contains(t), "listTopics contains " + t);
            Set<String> all = get(admin.listTopics(new ListTopicsOptions().listInternal(true)).names());
            assertTrue(all.containsAll(names));

            get(admin.deleteTopics(List.of(t)).all());
            long deadline = System.nanoTime() + Kit.WAIT.toNanos();
            while (get(admin.listTopics().names()).contains(t) && System.nanoTime() < deadline)
                Thread.sleep(100);
            assertFalse(get(admin.listTopics().names()).contains(t), "deleted topic still listed");
            ExecutionException e = assertThrows(ExecutionException.class,
                    () -> get(admin.describeTopics(List.of(t)).allTopicNames()));
            assertInstanceOf(UnknownTopicOrPartitionException.class, e.getCause());
        }
    }

    @Test
    void creating_an_existing_topic_fails_with_TopicExists() throws Exception {
        String t = Kit.topic("admin-exists");
        try (Admin admin = Kit.admin()) {
            Kit.createTopic(admin, t, 1, null);
            ExecutionException e = assertThrows(ExecutionException.class,
                    () -> get(admin.createTopics(List.of(new NewTopic(t, 1, (short) 1))).all()));
            assertInstanceOf(TopicExistsException.class, e.getCause());
        }
    }

    @Test
    void deleting_an_unknown_topic_fails_with_UnknownTopicOrPartition() throws Exception {
        try (Admin admin = Kit.admin()) {
            ExecutionException e = assertThrows(ExecutionException.class,
                    () -> get(admin.deleteTopics(List.of(Kit.topic("admin-never"))).all()));
            assertInstanceOf(UnknownTopicOrPartitionException.class, e.getCause());
        }
    }

    @Test
    void create_topic_with_default_partitions_and_with_configs() throws Exception {
        String t = Kit.topic("admin-cfgcreate");
        try (Admin admin = Kit.admin()) {
            NewTopic nt = new NewTopic(t, 2, (short) 1)
                    .configs(Map.of("retention.ms", "3600000", "cleanup.policy", "delete"));
            get(admin.createTopics(List.of(nt)).all());
            Kit.awaitPartitions(admin, t, 2);
            ConfigResource r = new ConfigResource(ConfigResource.Type.TOPIC, t);
            Config c = get(admin.describeConfigs(List.of(r)).all()).get(r);
            assertEquals("3600000", c.get("retention.ms").value());
            assertEquals(ConfigEntry.ConfigSource.DYNAMIC_TOPIC_CONFIG, c.get("retention.ms").source());
        }
    }

    @Test
    void create_partitions_grows_a_topic_and_refuses_to_shrink_it() throws Exception {
        String t = Kit.topic("admin-parts");
        try (Admin admin = Kit.admin()) {
            Kit.createTopic(admin, t, 2, null);
            get(admin.createPartitions(Map.of(t, NewPartitions.increaseTo(5))).all());
            TopicDescription d = Kit.awaitPartitions(admin, t, 5);
            assertEquals(5, d.partitions().size());

            ExecutionException e = assertThrows(ExecutionException.class,
                    () -> get(admin.createPartitions(Map.of(t, NewPartitions.increaseTo(3))).all()));
            assertInstanceOf(InvalidPartitionsException.class, e.getCause());

            // the new partitions take records
            try (KafkaProducer<byte[], byte[]> p = Kit.producer()) {
                assertEquals(4, p.send(new ProducerRecord<>(t, 4, null, Kit.bytes("in-4"))).get().partition());
            }
            assertEquals("in-4", Kit.str(Kit.readFromStart(List.of(new TopicPartition(t, 4)), 1).get(0).value()));
        }
    }

    @Test
    void describe_configs_of_a_topic_lists_defaults() throws Exception {
        String t = Kit.topic("admin-desc");
        try (Admin admin = Kit.admin()) {
            Kit.createTopic(admin, t, 1, null);
            ConfigResource r = new ConfigResource(ConfigResource.Type.TOPIC, t);
            Config c = get(admin.describeConfigs(List.of(r)).all()).get(r);
            for (String name : List.of("cleanup.policy", "retention.ms", "retention.bytes", "segment.bytes",
                    "max.message.bytes", "compression.type", "message.timestamp.type", "min.insync.replicas"))
                assertNotNull(c.get(name), "config " + name + " described");
            assertEquals("delete", c.get("cleanup.policy").value());
            assertEquals("producer", c.get("compression.type").value());
            assertEquals("CreateTime", c.get("message.timestamp.type").value());
            assertEquals("-1", c.get("retention.bytes").value());
            assertFalse(c.get("retention.ms").isReadOnly());
        }
    }

    @Test
    void incremental_alter_configs_sets_appends_and_deletes_topic_configs() throws Exception {
        String t = Kit.topic("admin-alter");
        try (Admin admin = Kit.admin()) {
            Kit.createTopic(admin, t, 1, null);
            ConfigResource r = new ConfigResource(ConfigResource.Type.TOPIC, t);
            String defaultRetention = get(admin.describeConfigs(List.of(r)).all()).get(r).get("retention.ms").value();

            Collection<AlterConfigOp> ops = List.of(
                    new AlterConfigOp(new ConfigEntry("retention.ms", "123456"), AlterConfigOp.OpType.SET),
                    new AlterConfigOp(new ConfigEntry("max.message.bytes", "200000"), AlterConfigOp.OpType.SET),
                    new AlterConfigOp(new ConfigEntry("cleanup.policy", "compact"), AlterConfigOp.OpType.APPEND));
            get(admin.incrementalAlterConfigs(Map.of(r, ops)).all());
            Config c = awaitConfig(admin, r, "retention.ms", "123456");
            assertEquals(ConfigEntry.ConfigSource.DYNAMIC_TOPIC_CONFIG, c.get("retention.ms").source());
            assertEquals("200000", c.get("max.message.bytes").value());
            assertEquals(Set.of("delete", "compact"), Set.of(c.get("cleanup.policy").value().split(",")));

            get(admin.incrementalAlterConfigs(Map.of(r, List.of(
                    new AlterConfigOp(new ConfigEntry("retention.ms", ""), AlterConfigOp.OpType.DELETE),
                    new AlterConfigOp(new ConfigEntry("cleanup.policy", "compact"), AlterConfigOp.OpType.SUBTRACT))))
                    .all());
            c = awaitConfig(admin, r, "retention.ms", defaultRetention);
            assertTrue(c.get("retention.ms").source() != ConfigEntry.ConfigSource.DYNAMIC_TOPIC_CONFIG,
                    "retention.ms back to its default, source " + c.get("retention.ms").source());
            assertEquals("delete", c.get("cleanup.policy").value());
            assertEquals("200000", c.get("max.message.bytes").value());
        }
    }

    @Test
    void incremental_alter_configs_rejects_an_invalid_value() throws Exception {
        String t = Kit.topic("admin-badcfg");
        try (Admin admin = Kit.admin()) {
            Kit.createTopic(admin, t, 1, null);
            ConfigResource r = new ConfigResource(ConfigResource.Type.TOPIC, t);
            ExecutionException e = assertThrows(ExecutionException.class, () -> get(admin.incrementalAlterConfigs(
                    Map.of(r, List.of(new AlterConfigOp(new ConfigEntry("retention.ms", "not-a-number"),
                            AlterConfigOp.OpType.SET)))).all()));
            assertInstanceOf(org.apache.kafka.common.errors.InvalidConfigurationException.class, e.getCause());
        }
    }

    private static Config awaitConfig(Admin admin, ConfigResource r, String name, String value) throws Exception {
        long deadline = System.nanoTime() + Kit.WAIT.toNanos();
        Config c;
        do {
            c = get(admin.describeConfigs(List.of(r)).all()).get(r);
            if (c.get(name) != null && value.equals(c.get(name).value())) return c;
            Thread.sleep(100);
        } while (System.nanoTime() < deadline);
        assertEquals(value, c.get(name) == null ? null : c.get(name).value(), "config " + name);
        return c;
    }

    @Test
    void delete_records_moves_the_log_start_offset() throws Exception {
        String t = Kit.topic("admin-delrec");
        TopicPartition tp = new TopicPartition(t, 0);
        try (Admin admin = Kit.admin()) {
            Kit.createTopic(admin, t, 1, null);
            try (KafkaProducer<byte[], byte[]> p = Kit.producer()) {
                for (int i = 0; i < 10; i++) p.send(new ProducerRecord<>(t, 0, null, Kit.bytes("r" + i)));
                p.flush();
            }
            DeletedRecords dr = get(admin.deleteRecords(Map.of(tp, RecordsToDelete.beforeOffset(4)))
                    .lowWatermarks().get(tp));
            assertEquals(4, dr.lowWatermark());

            assertEquals(4, get(admin.listOffsets(Map.of(tp, OffsetSpec.earliest())).partitionResult(tp)).offset());
            assertEquals(10, get(admin.listOffsets(Map.of(tp, OffsetSpec.latest())).partitionResult(tp)).offset());

            var recs = Kit.readFromStart(List.of(tp), 6);
            assertEquals(4, recs.get(0).offset());
            assertEquals("r4", Kit.str(recs.get(0).value()));
            assertEquals("r9", Kit.str(recs.get(5).value()));

            // deleting up to the high watermark (-1 means "to the end") empties the partition
            dr = get(admin.deleteRecords(Map.of(tp, RecordsToDelete.beforeOffset(-1))).lowWatermarks().get(tp));
            assertEquals(10, dr.lowWatermark());
            assertEquals(10, get(admin.listOffsets(Map.of(tp, OffsetSpec.earliest())).partitionResult(tp)).offset());
        }
    }

    @Test
    void delete_records_beyond_the_high_watermark_fails() throws Exception {
        String t = Kit.topic("admin-delrec-oor");
        TopicPartition tp = new TopicPartition(t, 0);
        try (Admin admin = Kit.admin()) {
            Kit.createTopic(admin, t, 1, null);
            try (KafkaProducer<byte[], byte[]> p = Kit.producer()) {
                p.send(new ProducerRecord<>(t, 0, null, Kit.bytes("only"))).get();
            }
            ExecutionException e = assertThrows(ExecutionException.class, () -> get(
                    admin.deleteRecords(Map.of(tp, RecordsToDelete.beforeOffset(5))).lowWatermarks().get(tp)));
            assertInstanceOf(org.apache.kafka.common.errors.OffsetOutOfRangeException.class, e.getCause());
        }
    }

    @Test
    void describe_cluster_names_the_broker_and_a_cluster_id() throws Exception {
        try (Admin admin = Kit.admin()) {
            DescribeClusterResult dc = admin.describeCluster();
            Collection<Node> nodes = get(dc.nodes());
            assertFalse(nodes.isEmpty(), "at least one broker");
            assertNotNull(get(dc.clusterId()), "cluster id");
            Node controller = get(dc.controller());
            assertNotNull(controller);
            String[] hp = Kit.BOOTSTRAP.split(":");
            assertTrue(nodes.stream().anyMatch(n -> n.port() == Integer.parseInt(hp[hp.length - 1])),
                    "a broker advertises the bootstrap port: " + nodes);
        }
    }

    @Test
    void list_offsets_of_an_empty_partition_are_zero() throws Exception {
        String t = Kit.topic("admin-empty");
        TopicPartition tp = new TopicPartition(t, 0);
        try (Admin admin = Kit.admin()) {
            Kit.createTopic(admin, t, 1, null);
            assertEquals(0, get(admin.listOffsets(Map.of(tp, OffsetSpec.earliest())).partitionResult(tp)).offset());
            assertEquals(0, get(admin.listOffsets(Map.of(tp, OffsetSpec.latest())).partitionResult(tp)).offset());
            assertEquals(-1, get(admin.listOffsets(Map.of(tp, OffsetSpec.maxTimestamp())).partitionResult(tp)).offset());
        }
    }
}
