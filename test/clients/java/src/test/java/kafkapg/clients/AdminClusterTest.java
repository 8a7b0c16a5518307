package kafkapg.clients;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterPartitionReassignmentsResult;
import org.apache.kafka.clients.admin.DescribeTopicsOptions;
import org.apache.kafka.clients.admin.ListConfigResourcesOptions;
import org.apache.kafka.clients.admin.NewPartitionReassignment;
import org.apache.kafka.clients.admin.QuorumInfo;
import org.apache.kafka.clients.admin.ScramCredentialInfo;
import org.apache.kafka.clients.admin.ScramMechanism;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.admin.UserScramCredentialDeletion;
import org.apache.kafka.clients.admin.UserScramCredentialUpsertion;
import org.apache.kafka.clients.admin.UserScramCredentialsDescription;
import org.apache.kafka.common.ElectionType;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.ClusterAuthorizationException;
import org.apache.kafka.common.errors.ElectionNotNeededException;
import org.apache.kafka.common.errors.InvalidReplicaAssignmentException;
import org.apache.kafka.common.errors.NoReassignmentInProgressException;
import org.apache.kafka.common.errors.ResourceNotFoundException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.apache.kafka.common.errors.UnsupportedVersionException;
import org.apache.kafka.common.quota.ClientQuotaFilter;
import org.junit.jupiter.api.Test;

/**
 * The cluster-management admin APIs on a cluster of one broker: DescribeTopicPartitions (paged),
 * ElectLeaders, Alter/ListPartitionReassignments, DescribeQuorum, ListConfigResources,
 * DescribeClientQuotas and the SCRAM credential APIs. Each answer is what a single-node Apache Kafka
 * KRaft cluster gives; the one intended difference is AlterUserScramCredentials, which kafka_pg
 * refuses with CLUSTER_AUTHORIZATION_FAILED to a client that is not a superuser or kafka_admin member
 * logged in with SASL (this test's client is anonymous).
 */
class AdminClusterTest {

    private static <T> T get(KafkaFuture<T> f) throws Exception {
        return f.get(30, TimeUnit.SECONDS);
    }

    private static Throwable cause(KafkaFuture<?> f) {
        ExecutionException e = assertThrows(ExecutionException.class, () -> get(f));
        return e.getCause();
    }

    private static int nodeId(Admin admin) throws Exception {
        Collection<org.apache.kafka.common.Node> nodes = get(admin.describeCluster().nodes());
        assertEquals(1, nodes.size(), "a cluster of one broker");
        return nodes.iterator().next().id();
    }

    @Test
    void describe_topics_pages_through_DescribeTopicPartitions() throws Exception {
        String a = Kit.topic("dtp-a");
        String b = Kit.topic("dtp-b");
        try (Admin admin = Kit.admin()) {
            int node = nodeId(admin);
            Kit.createTopic(admin, a, 5, null);
            Kit.createTopic(admin, b, 3, null);
            // two partitions per response: the client follows NextCursor across and between topics
            Map<String, TopicDescription> d = get(admin.describeTopics(List.of(b, a),
                    new DescribeTopicsOptions().partitionSizeLimitPerResponse(2)
                            .includeAuthorizedOperations(true)).allTopicNames());
            assertEquals(Set.of(a, b), d.keySet());
            for (String t : List.of(a, b)) {
                TopicDescription td = d.get(t);
                int n = t.equals(a) ? 5 : 3;
                assertEquals(t, td.name());
                assertFalse(td.isInternal());
                assertNotNull(td.topicId());
                assertEquals(n, td.partitions().size(), t + " partitions");
                for (int p = 0; p < n; p++) {
                    TopicPartitionInfo pi = td.partitions().get(p);
                    assertEquals(p, pi.partition());
                    assertEquals(node, pi.leader().id());
                    assertEquals(List.of(node), pi.replicas().stream().map(x -> x.id()).toList());
                    assertEquals(List.of(node), pi.isr().stream().map(x -> x.id()).toList());
                    assertTrue(pi.elr().isEmpty(), "no eligible leader replicas");
                    assertTrue(pi.lastKnownElr().isEmpty(), "no last known ELR");
                }
                // no authorizer: every operation a topic has
                assertEquals(Set.of(AclOperation.READ, AclOperation.WRITE, AclOperation.CREATE,
                        AclOperation.DELETE, AclOperation.ALTER, AclOperation.DESCRIBE,
                        AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS), td.authorizedOperations());
            }
            // the ids are the ones Metadata reports
            assertEquals(get(admin.describeTopics(List.of(a)).allTopicNames()).get(a).topicId(),
                    d.get(a).topicId());

            // a page of one partition at a time gives the same answer
            TopicDescription one = get(admin.describeTopics(List.of(a),
                    new DescribeTopicsOptions().partitionSizeLimitPerResponse(1)).allTopicNames()).get(a);
            assertEquals(5, one.partitions().size());

            String missing = Kit.topic("dtp-missing");
            assertInstanceOf(UnknownTopicOrPartitionException.class,
                    cause(admin.describeTopics(List.of(missing)).allTopicNames()));
        }
    }

    @Test
    void elect_leaders_is_never_needed_on_one_broker() throws Exception {
        String t = Kit.topic("elect");
        try (Admin admin = Kit.admin()) {
            Kit.createTopic(admin, t, 2, null);
            TopicPartition p0 = new TopicPartition(t, 0);
            TopicPartition p9 = new TopicPartition(t, 9);
            TopicPartition unknown = new TopicPartition(Kit.topic("elect-missing"), 0);
            for (ElectionType type : ElectionType.values()) {
                Map<TopicPartition, Optional<Throwable>> r =
                        get(admin.electLeaders(type, Set.of(p0, p9, unknown)).partitions());
                assertEquals(Set.of(p0, p9, unknown), r.keySet());
                assertInstanceOf(ElectionNotNeededException.class, r.get(p0).orElseThrow(), type + " " + p0);
                assertInstanceOf(UnknownTopicOrPartitionException.class, r.get(p9).orElseThrow());
                assertInstanceOf(UnknownTopicOrPartitionException.class, r.get(unknown).orElseThrow());
                // every partition: Kafka lists only the partitions whose election was needed
                assertEquals(Map.of(), get(admin.electLeaders(type, null).partitions()), type + " for all");
            }
        }
    }

    @Test
    void partition_reassignments_to_the_only_broker_and_nothing_in_progress() throws Exception {
        String t = Kit.topic("reassign");
        try (Admin admin = Kit.admin()) {
            int node = nodeId(admin);
            Kit.createTopic(admin, t, 2, null);
            TopicPartition p0 = new TopicPartition(t, 0);
            assertEquals(Map.of(), get(admin.listPartitionReassignments().reassignments()));
            assertEquals(Map.of(), get(admin.listPartitionReassignments(Set.of(p0)).reassignments()));

            // to the replica it has: done at once
            assertNull(get(reassign(admin, p0, List.of(node))));
            assertEquals(Map.of(), get(admin.listPartitionReassignments().reassignments()));

            Throwable e = cause(reassign(admin, p0, List.of(node + 100)));
            assertInstanceOf(InvalidReplicaAssignmentException.class, e);
            assertTrue(e.getMessage().contains("broker " + (node + 100) + ", but no such broker is registered"),
                    e.getMessage());
            e = cause(reassign(admin, p0, List.of(node, node)));
            assertInstanceOf(InvalidReplicaAssignmentException.class, e);
            assertTrue(e.getMessage().contains("more than once"), e.getMessage());

            AlterPartitionReassignmentsResult cancel =
                    admin.alterPartitionReassignments(Map.of(p0, Optional.empty()));
            assertInstanceOf(NoReassignmentInProgressException.class, cause(cancel.values().get(p0)));

            assertInstanceOf(UnknownTopicOrPartitionException.class,
                    cause(reassign(admin, new TopicPartition(t, 7), List.of(node))));
            assertInstanceOf(UnknownTopicOrPartitionException.class,
                    cause(reassign(admin, new TopicPartition(Kit.topic("reassign-missing"), 0), List.of(node))));
        }
    }

    private static KafkaFuture<Void> reassign(Admin admin, TopicPartition tp, List<Integer> replicas) {
        return admin.alterPartitionReassignments(
                Map.of(tp, Optional.of(new NewPartitionReassignment(replicas)))).values().get(tp);
    }

    @Test
    void the_metadata_quorum_is_one_voter_that_leads() throws Exception {
        try (Admin admin = Kit.admin()) {
            QuorumInfo q = get(admin.describeMetadataQuorum().quorumInfo());
            assertEquals(1, q.voters().size(), "voters " + q.voters());
            QuorumInfo.ReplicaState v = q.voters().get(0);
            assertEquals(q.leaderId(), v.replicaId());
            assertTrue(q.leaderEpoch() >= 1, "leader epoch " + q.leaderEpoch());
            assertTrue(q.highWatermark() >= 0 && v.logEndOffset() >= q.highWatermark(),
                    "high watermark " + q.highWatermark() + ", log end offset " + v.logEndOffset());
            assertTrue(v.lastFetchTimestamp().isPresent() && v.lastCaughtUpTimestamp().isPresent());
            assertTrue(q.observers().isEmpty(), "observers " + q.observers());
            assertTrue(q.nodes().containsKey(q.leaderId()), "nodes " + q.nodes());
            assertFalse(q.nodes().get(q.leaderId()).endpoints().isEmpty());
        }
    }

    @Test
    void list_config_resources_by_type() throws Exception {
        String t = Kit.topic("lcr");
        try (Admin admin = Kit.admin()) {
            int node = nodeId(admin);
            Kit.createTopic(admin, t, 1, null);
            Collection<ConfigResource> all = get(admin.listConfigResources().all());
            assertTrue(all.contains(new ConfigResource(ConfigResource.Type.TOPIC, t)), "all: " + all);
            assertTrue(all.contains(new ConfigResource(ConfigResource.Type.BROKER, String.valueOf(node))), "all: " + all);

            for (ConfigResource.Type type : List.of(ConfigResource.Type.TOPIC, ConfigResource.Type.BROKER,
                    ConfigResource.Type.GROUP, ConfigResource.Type.CLIENT_METRICS)) {
                Collection<ConfigResource> some = get(admin.listConfigResources(Set.of(type),
                        new ListConfigResourcesOptions()).all());
                assertTrue(some.stream().allMatch(r -> r.type() == type), type + ": " + some);
                assertTrue(all.containsAll(some), type + ": " + some);
            }
            Collection<ConfigResource> topics = get(admin.listConfigResources(Set.of(ConfigResource.Type.TOPIC),
                    new ListConfigResourcesOptions()).all());
            assertTrue(topics.contains(new ConfigResource(ConfigResource.Type.TOPIC, t)));

            assertInstanceOf(UnsupportedVersionException.class, cause(admin.listConfigResources(
                    Set.of(ConfigResource.Type.UNKNOWN), new ListConfigResourcesOptions()).all()));
        }
    }

    @Test
    void describe_client_quotas_answers() throws Exception {
        try (Admin admin = Kit.admin()) {
            assertNotNull(get(admin.describeClientQuotas(ClientQuotaFilter.all()).entities()));
        }
    }

    @Test
    void scram_credentials_describe_and_alter() throws Exception {
        String user = "jt-scram-" + java.util.UUID.randomUUID().toString().substring(0, 8);
        try (Admin admin = Kit.admin()) {
            // every listed user has a credential, and only a mechanism and an iteration count
            Map<String, UserScramCredentialsDescription> all = get(admin.describeUserScramCredentials().all());
            for (UserScramCredentialsDescription d : all.values()) {
                assertFalse(d.credentialInfos().isEmpty(), d.toString());
                for (ScramCredentialInfo i : d.credentialInfos())
                    assertTrue(i.iterations() >= 4096 && i.mechanism() != ScramMechanism.UNKNOWN, d.toString());
            }
            assertInstanceOf(ResourceNotFoundException.class,
                    cause(admin.describeUserScramCredentials(List.of(user)).description(user)));

            KafkaFuture<Void> upsert = admin.alterUserScramCredentials(List.of(new UserScramCredentialUpsertion(
                    user, new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 8192), "secret"))).all();
            Throwable refused = null;
            try {
                get(upsert);
            } catch (ExecutionException e) {
                refused = e.getCause();
            }
            if (refused != null) {
                // kafka_pg: refused to an anonymous client; nothing changed
                assertInstanceOf(ClusterAuthorizationException.class, refused);
                assertInstanceOf(ResourceNotFoundException.class,
                        cause(admin.describeUserScramCredentials(List.of(user)).description(user)));
                assertInstanceOf(ClusterAuthorizationException.class, cause(admin.alterUserScramCredentials(
                        List.of(new UserScramCredentialDeletion(user, ScramMechanism.SCRAM_SHA_256))).all()));
                return;
            }
            // Kafka: the credential is described by mechanism and iterations, then deleted
            UserScramCredentialsDescription d =
                    get(admin.describeUserScramCredentials(List.of(user)).description(user));
            assertEquals(List.of(new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 8192)), d.credentialInfos());
            get(admin.alterUserScramCredentials(
                    List.of(new UserScramCredentialDeletion(user, ScramMechanism.SCRAM_SHA_256))).all());
        }
    }
}
