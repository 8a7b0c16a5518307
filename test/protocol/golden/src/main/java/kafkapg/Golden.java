/*
 * Golden vectors for kafka_pg's protocol codec (src/protocol/).
 *
 * Serializes populated instances of Kafka's own generated message classes
 * (org.apache.kafka.common.message.*Data, from kafka-clients) at several
 * versions each and writes the bytes to test/protocol/fixtures/NAME.vN.bin.
 * The C test (test/protocol/test_protocol.c) decodes each fixture, checks
 * field values and requires a byte-identical re-encoding.
 *
 *   cd test/protocol/golden && mvn -q compile exec:java                 # fixtures
 *   cd test/protocol/golden && mvn -q compile exec:java -Dexec.args=errors   # error table
 *
 * Every field is filled by reflection with a value derived only from its type
 * and the index of the element that holds it (idx: 0 at top level, the array
 * index inside an array), so the C test can predict it:
 *
 *   int8 7, int16 16+idx, int32 3200+idx, int64 6400000000+idx,
 *   uint16 (Java int) 1600+idx, uint32 (Java long) 3200000000+idx,
 *   float64 0.5+idx, bool true, string "<javaFieldName>-<idx>",
 *   bytes {0xB0,0xB1,0xB2,idx}, uuid (0x1111111111111111+idx, 0x2222222222222222),
 *   records 10 bytes 0xC0+i, struct arrays 2 elements, primitive arrays 3
 *   elements (element i gets idx i).
 *
 * A field that the version lacks makes Kafka's writer throw "Attempted to write
 * a non-default X at version N" unless it is ignorable; such a field is reset to
 * its default and the write retried.  Some fields are left at their default on
 * purpose (LEAVE_DEFAULT) so that nulls and absent tagged fields are covered.
 */
package kafkapg;

import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.lang.reflect.ParameterizedType;
import java.lang.reflect.Type;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.errors.UnsupportedVersionException;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.protocol.Message;
import org.apache.kafka.common.protocol.ObjectSerializationCache;
import org.apache.kafka.common.record.internal.BaseRecords;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.utils.internals.ImplicitLinkedHashCollection;

public class Golden {

    /* message class simple name prefix (without "Data") -> versions to write */
    static final Object[][] PLAN = {
        {"ApiVersionsRequest", new int[] {0, 2, 3, 4}},
        {"ApiVersionsResponse", new int[] {0, 2, 3, 4}},
        {"MetadataRequest", new int[] {0, 4, 8, 9, 12, 13}},
        {"MetadataResponse", new int[] {0, 5, 8, 9, 12, 13}},
        {"ProduceRequest", new int[] {3, 7, 8, 9, 12, 13}},
        {"ProduceResponse", new int[] {3, 7, 8, 9, 10, 13}},
        {"FetchRequest", new int[] {4, 10, 11, 12, 13, 15, 17, 18}},
        {"FetchResponse", new int[] {4, 10, 11, 12, 13, 16, 18}},
        {"ListOffsetsRequest", new int[] {1, 4, 5, 6, 10}},
        {"ListOffsetsResponse", new int[] {1, 4, 5, 6, 10}},
        {"CreateTopicsRequest", new int[] {2, 4, 5, 7}},
        {"CreateTopicsResponse", new int[] {2, 4, 5, 7}},
        {"FindCoordinatorRequest", new int[] {0, 1, 3, 4, 6}},
        {"FindCoordinatorResponse", new int[] {0, 1, 3, 4, 6}},
        {"JoinGroupRequest", new int[] {0, 1, 5, 6, 9}},
        {"JoinGroupResponse", new int[] {0, 2, 5, 6, 7, 9}},
        {"SyncGroupRequest", new int[] {0, 3, 4, 5}},
        {"SyncGroupResponse", new int[] {0, 3, 4, 5}},
        {"HeartbeatRequest", new int[] {0, 3, 4}},
        {"HeartbeatResponse", new int[] {0, 4}},
        {"LeaveGroupRequest", new int[] {0, 3, 4, 5}},
        {"LeaveGroupResponse", new int[] {0, 3, 4, 5}},
        {"OffsetCommitRequest", new int[] {2, 5, 7, 8, 9, 10}},
        {"OffsetCommitResponse", new int[] {2, 7, 8, 10}},
        {"OffsetFetchRequest", new int[] {1, 5, 6, 7, 8, 10}},
        {"OffsetFetchResponse", new int[] {1, 5, 6, 7, 8, 10}},
        {"InitProducerIdRequest", new int[] {0, 1, 2, 5}},
        {"InitProducerIdResponse", new int[] {0, 1, 2, 5}},
        /* v1 is unstable in the snapshot that the codec follows */
        {"ConsumerGroupHeartbeatRequest", new int[] {0}},
        {"ConsumerGroupHeartbeatResponse", new int[] {0}},
        {"DescribeGroupsRequest", new int[] {0, 5}},
        {"DescribeGroupsResponse", new int[] {0, 5}},
        {"ConsumerProtocolSubscription", new int[] {0, 3}},
        {"ConsumerProtocolAssignment", new int[] {0, 3}},
        /* cluster-management admin APIs (issue 14) */
        {"DescribeTopicPartitionsRequest", new int[] {0}},
        {"DescribeTopicPartitionsResponse", new int[] {0}},
        {"ElectLeadersRequest", new int[] {0, 1, 2}},
        {"ElectLeadersResponse", new int[] {0, 1, 2}},
        {"AlterPartitionReassignmentsRequest", new int[] {0, 1}},
        {"AlterPartitionReassignmentsResponse", new int[] {0, 1}},
        {"ListPartitionReassignmentsRequest", new int[] {0}},
        {"ListPartitionReassignmentsResponse", new int[] {0}},
        {"DescribeQuorumRequest", new int[] {0, 1, 2}},
        {"DescribeQuorumResponse", new int[] {0, 1, 2}},
        {"ListConfigResourcesRequest", new int[] {0, 1}},
        {"ListConfigResourcesResponse", new int[] {0, 1}},
        {"DescribeClientQuotasRequest", new int[] {0, 1}},
        {"DescribeClientQuotasResponse", new int[] {0, 1}},
        {"DescribeUserScramCredentialsRequest", new int[] {0}},
        {"DescribeUserScramCredentialsResponse", new int[] {0}},
        {"AlterUserScramCredentialsRequest", new int[] {0}},
        {"AlterUserScramCredentialsResponse", new int[] {0}},
    };

    /* "MessageName.fieldName" left at the default, to cover nulls / absent tags */
    static final Set<String> LEAVE_DEFAULT = Set.of(
        "MetadataResponseBroker.rack",
        "ProduceRequestData.transactionalId",
        "JoinGroupRequestData.groupInstanceId",
        "FetchResponseData.nodeEndpoints",
        "OffsetFetchRequestGroup.topics",
        "ConsumerGroupHeartbeatRequestData.rackId");

    public static void main(String[] args) throws Exception {
        if (args.length > 0 && args[0].equals("errors")) {
            for (Errors e : Errors.values())
                System.out.println(e.code() + " " + e.name());
            return;
        }
        Path out = Paths.get(args.length > 0 ? args[0] : "../fixtures");
        Files.createDirectories(out);
        int n = 0;
        for (Object[] p : PLAN) {
            String name = (String) p[0];
            Class<?> cls;
            try {
                cls = Class.forName("org.apache.kafka.common.message." + name + "Data");
            } catch (ClassNotFoundException e) {
                cls = Class.forName("org.apache.kafka.common.message." + name);   /* data schemas */
            }
            for (int v : (int[]) p[1]) {
                Message m = (Message) cls.getDeclaredConstructor().newInstance();
                fill(m, 0);
                byte[] bytes = writeWithResets(m, (short) v, name);
                Files.write(out.resolve(name + ".v" + v + ".bin"), bytes);
                n++;
            }
        }
        System.out.println("wrote " + n + " fixtures to " + out);
    }

    static byte[] write(Message m, short v) {
        ObjectSerializationCache cache = new ObjectSerializationCache();
        int size = m.size(cache, v);
        ByteBuffer buf = ByteBuffer.allocate(size);
        m.write(new ByteBufferAccessor(buf), cache, v);
        if (buf.remaining() != 0)
            throw new IllegalStateException("size() disagrees with write()");
        return buf.array();
    }

    static byte[] writeWithResets(Message m, short v, String name) throws Exception {
        Set<String> reset = new HashSet<>();
        for (int tries = 0; tries < 200; tries++) {
            try {
                return write(m, v);
            } catch (UnsupportedVersionException e) {
                String msg = e.getMessage();
                String prefix = "Attempted to write a non-default ";
                int i = msg.indexOf(prefix);
                if (i < 0)
                    throw e;
                String field = msg.substring(i + prefix.length()).split(" ")[0];
                if (!reset.add(field) && !resetAll(m, field))
                    throw e;
                resetAll(m, field);
            }
        }
        throw new IllegalStateException(name + " v" + v + ": too many resets");
    }

    /* Reset every field called `field` anywhere in the tree to its default. */
    static boolean resetAll(Object o, String field) throws Exception {
        boolean any = false;
        if (o instanceof Collection) {
            for (Object e : (Collection<?>) o)
                any |= resetAll(e, field);
            return any;
        }
        if (!(o instanceof Message))
            return false;
        Object fresh = o.getClass().getDeclaredConstructor().newInstance();
        for (Field f : fields(o.getClass())) {
            if (f.getName().equals(field)) {
                f.set(o, f.get(fresh));
                any = true;
            } else {
                any |= resetAll(f.get(o), field);
            }
        }
        return any;
    }

    static List<Field> fields(Class<?> c) {
        List<Field> out = new ArrayList<>();
        for (Field f : c.getDeclaredFields()) {
            if (Modifier.isStatic(f.getModifiers()) || f.getName().startsWith("_"))
                continue;
            /* the links of an ImplicitLinkedHashCollection element, not message fields */
            if (ImplicitLinkedHashCollection.Element.class.isAssignableFrom(c)
                && (f.getName().equals("next") || f.getName().equals("prev")))
                continue;
            f.setAccessible(true);
            out.add(f);
        }
        return out;
    }

    static void fill(Object o, int idx) throws Exception {
        String owner = o.getClass().getSimpleName();
        for (Field f : fields(o.getClass())) {
            if (LEAVE_DEFAULT.contains(owner + "." + f.getName()))
                continue;
            Class<?> t = f.getType();
            Object cur = f.get(o);
            if (t == byte.class) f.set(o, (byte) 7);
            else if (t == short.class) f.set(o, (short) (16 + idx));
            else if (t == int.class) f.set(o, isUint16(o, f) ? 1600 + idx : 3200 + idx);
            else if (t == long.class) f.set(o, isUint32(o, f) ? 3200000000L + idx : 6400000000L + idx);
            else if (t == double.class) f.set(o, 0.5 + idx);
            else if (t == boolean.class) f.set(o, true);
            else if (t == String.class) f.set(o, f.getName() + "-" + idx);
            else if (t == byte[].class) f.set(o, new byte[] {(byte) 0xB0, (byte) 0xB1, (byte) 0xB2, (byte) idx});
            else if (t == ByteBuffer.class) f.set(o, ByteBuffer.wrap(new byte[] {(byte) 0xB0, (byte) 0xB1, (byte) 0xB2, (byte) idx}));
            else if (t == Uuid.class) f.set(o, new Uuid(0x1111111111111111L + idx, 0x2222222222222222L));
            else if (BaseRecords.class.isAssignableFrom(t)) {
                byte[] r = new byte[10];
                for (int i = 0; i < r.length; i++)
                    r[i] = (byte) (0xC0 + i);
                f.set(o, MemoryRecords.readableRecords(ByteBuffer.wrap(r)));
            } else if (Message.class.isAssignableFrom(t)) {
                Object s = t.getDeclaredConstructor().newInstance();
                fill(s, idx);
                f.set(o, s);
            } else if (Collection.class.isAssignableFrom(t)) {
                Class<?> elem = elementClass(f);
                @SuppressWarnings("unchecked")
                Collection<Object> coll = cur != null ? (Collection<Object>) cur
                    : (Collection<Object>) (t.isInterface() ? new ArrayList<>()
                                            : t.getDeclaredConstructor().newInstance());
                coll.clear();
                if (Message.class.isAssignableFrom(elem)) {
                    for (int i = 0; i < 2; i++) {
                        Object e = elem.getDeclaredConstructor().newInstance();
                        fill(e, i);
                        coll.add(e);
                    }
                } else {
                    for (int i = 0; i < 3; i++)
                        coll.add(primitive(elem, f.getName(), i));
                }
                f.set(o, coll);
            } else {
                throw new IllegalStateException("unhandled " + owner + "." + f.getName() + " " + t);
            }
        }
    }

    static Object primitive(Class<?> elem, String name, int i) {
        if (elem == Byte.class) return (byte) 7;
        if (elem == Short.class) return (short) (16 + i);
        if (elem == Integer.class) return 3200 + i;
        if (elem == Long.class) return 6400000000L + i;
        if (elem == String.class) return name + "-" + i;
        if (elem == Uuid.class) return new Uuid(0x1111111111111111L + i, 0x2222222222222222L);
        if (elem == Boolean.class) return true;
        throw new IllegalStateException("unhandled element " + elem);
    }

    /* List<X> -> X; XCollection extends ImplicitLinkedHashMultiCollection<X> -> X */
    static Class<?> elementClass(Field f) {
        Type g = f.getGenericType();
        if (g instanceof ParameterizedType)
            return (Class<?>) ((ParameterizedType) g).getActualTypeArguments()[0];
        Type sup = f.getType().getGenericSuperclass();
        while (!(sup instanceof ParameterizedType))
            sup = ((Class<?>) sup).getGenericSuperclass();
        return (Class<?>) ((ParameterizedType) sup).getActualTypeArguments()[0];
    }

    /* Kafka maps uint16 to int and uint32 to long; none of the planned messages
     * has one (only DescribeQuorumResponse's Port is uint16). */
    static boolean isUint16(Object o, Field f) {
        return false;
    }

    static boolean isUint32(Object o, Field f) {
        return false;
    }
}
