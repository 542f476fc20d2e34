// What a Java JMS producer puts on the wire and what a Java JMS consumer reads, for
// tests/openwire/test_mapping.py (ternmq's OpenWire <-> JMS message mapping), compiled with
// OpenWireFixtures.java (its wire format settings and hex helper).
//
// "produce": builds messages through the JMS API of ActiveMQ's client (setJMSxxx, the typed
// property setters, the body setters, as a producer's send leaves them), marshals each with
// OpenWireFormat (version 12, loose, cache off) and prints "<label> <hex frame>".
// "consume": reads "<label> <hex frame>" lines (frames ternmq encoded), unmarshals each as the
// client's consumer does (read-only body and properties) and prints one line per value Java
// reads: "<label> <key> <Java class> <hex of the UTF-8 String.valueOf(value)>", where <key> is
// a header getter (JMSMessageID...), "prop:NAME" (getObjectProperty), "map:NAME" (getObject),
// "stream:N" (readObject) or "body" (getText, getObject, the bytes). byte[] values print the
// hex of the bytes; a getter that throws prints "!" and the exception class as <Java class>,
// and its message as the value.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Enumeration;
import java.util.List;
import javax.jms.JMSException;
import javax.jms.MessageEOFException;
import org.apache.activemq.ScheduledMessage;
import org.apache.activemq.command.*;
import org.apache.activemq.openwire.OpenWireFormat;
import org.apache.activemq.util.ByteSequence;

public class OpenWireMapping {
    private static OpenWireFormat format() {
        return OpenWireFixtures.format(false);
    }

    private static String hex(byte[] data, int offset, int length) {
        return OpenWireFixtures.hex(data, offset, length);
    }

    private static String text(Object value) throws Exception {
        if (value instanceof byte[]) {
            byte[] b = (byte[]) value;
            return b.length == 0 ? "-" : hex(b, 0, b.length);
        }
        byte[] utf8 = String.valueOf(value).getBytes("UTF-8");
        return utf8.length == 0 ? "-" : hex(utf8, 0, utf8.length);
    }

    // ---- produce ---------------------------------------------------------------------------

    private static final ProducerId PRODUCER =
        new ProducerId(new SessionId(new ConnectionId("ID:javahost-40000-1764000000000-1:1"), 2), 3);
    private static long sequence = 0;

    // What ActiveMQSession.send does to a message before it goes on the wire.
    private static <T extends ActiveMQMessage> T send(T m, ActiveMQDestination dest, int mode, int priority,
                                                      long timeToLive, long now) throws Exception {
        m.setJMSDestination(dest);
        m.setJMSDeliveryMode(mode);
        m.setJMSPriority(priority);
        m.setJMSExpiration(timeToLive > 0 ? now + timeToLive : 0);
        m.setJMSTimestamp(now);
        m.setMessageId(new MessageId(PRODUCER, ++sequence));
        m.setProducerId(PRODUCER);
        m.onSend();
        m.storeContent();
        return m;
    }

    private static void print(String label, Object command) throws Exception {
        ByteSequence seq = format().marshal(command);
        System.out.println(label + " " + hex(seq.data, seq.offset, seq.length));
    }

    private static void typedProperties(ActiveMQMessage m) throws JMSException {
        m.setBooleanProperty("aBoolean", true);
        m.setByteProperty("aByte", (byte) -128);
        m.setShortProperty("aShort", (short) -32768);
        m.setIntProperty("anInt", Integer.MIN_VALUE);
        m.setLongProperty("aLong", Long.MAX_VALUE);
        m.setFloatProperty("aFloat", 3.4028235e38f);
        m.setDoubleProperty("aDouble", -2.5e-300);
        m.setStringProperty("aString", "caf\u00e9 \u0000 \ud83d\ude00");
        m.setStringProperty("anEmptyString", "");
        m.setObjectProperty("aNull", null);
        m.setStringProperty("aLongString", "\u00e9".repeat(9000));
    }

    private static void produce() throws Exception {
        ActiveMQQueue queue = new ActiveMQQueue("orders");
        ActiveMQTopic topic = new ActiveMQTopic("prices");
        long now = 1764000000000L;

        ActiveMQTextMessage text = new ActiveMQTextMessage();
        text.setText("h\u00e9llo \ud83d\ude00 \u0000 end");
        text.setJMSCorrelationID("corr-1");
        text.setJMSType("order");
        text.setJMSReplyTo(new ActiveMQTempQueue("ID:javahost-40000-1764000000000-1:1:1"));
        text.setStringProperty("JMSXGroupID", "group-a");
        text.setIntProperty("JMSXGroupSeq", 7);
        text.setUserID("alice");
        typedProperties(text);
        print("text", send(text, queue, javax.jms.DeliveryMode.PERSISTENT, 7, 60000, now));

        ActiveMQTextMessage nullText = new ActiveMQTextMessage();
        print("text-null", send(nullText, topic, javax.jms.DeliveryMode.NON_PERSISTENT, 0, 0, now));

        ActiveMQBytesMessage bytes = new ActiveMQBytesMessage();
        bytes.writeBytes(new byte[] {0, 1, 2, (byte) 0xff});
        bytes.writeUTF("x\u00e9");
        bytes.setLongProperty(ScheduledMessage.AMQ_SCHEDULED_DELAY, 5000L);
        print("bytes", send(bytes, queue, javax.jms.DeliveryMode.PERSISTENT, 4, 0, now));

        ActiveMQBytesMessage emptyBytes = new ActiveMQBytesMessage();
        print("bytes-empty", send(emptyBytes, queue, javax.jms.DeliveryMode.PERSISTENT, 4, 0, now));

        ActiveMQMapMessage map = new ActiveMQMapMessage();
        map.setBoolean("bool", true);
        map.setByte("byte", (byte) 127);
        map.setShort("short", (short) 32767);
        map.setChar("char", '\u00e9');
        map.setInt("int", Integer.MAX_VALUE);
        map.setLong("long", Long.MIN_VALUE);
        map.setFloat("float", 0.1f);
        map.setDouble("double", 0.1);
        map.setString("string", "\ud83d\ude00");
        map.setBytes("bytes", new byte[] {9, 8, 7});
        map.setBytes("emptyBytes", new byte[0]);
        map.setString("null", null);
        print("map", send(map, topic, javax.jms.DeliveryMode.PERSISTENT, 4, 0, now));

        ActiveMQMapMessage big = new ActiveMQMapMessage();
        for (int i = 0; i < 5000; i++) {
            big.setInt("k" + i, i);
        }
        big.setString("huge", "x".repeat(70000));
        print("map-big", send(big, queue, javax.jms.DeliveryMode.PERSISTENT, 4, 0, now));

        ActiveMQStreamMessage stream = new ActiveMQStreamMessage();
        stream.writeBoolean(false);
        stream.writeByte((byte) -1);
        stream.writeShort((short) -2);
        stream.writeChar('Z');
        stream.writeInt(-3);
        stream.writeLong(-4L);
        stream.writeFloat(0.25f);
        stream.writeDouble(-0.5);
        stream.writeString("str\u00e9");
        stream.writeBytes(new byte[] {1, 2});
        stream.writeObject(null);
        print("stream", send(stream, queue, javax.jms.DeliveryMode.PERSISTENT, 4, 0, now));

        ActiveMQObjectMessage object = new ActiveMQObjectMessage();
        object.setObject(new ArrayList<>(List.of("a", "b")));
        print("object", send(object, queue, javax.jms.DeliveryMode.PERSISTENT, 4, 0, now));

        ActiveMQObjectMessage nullObject = new ActiveMQObjectMessage();
        print("object-null", send(nullObject, queue, javax.jms.DeliveryMode.PERSISTENT, 4, 0, now));

        ActiveMQMessage plain = new ActiveMQMessage();
        plain.setStringProperty("only", "headers");
        print("plain", send(plain, topic, javax.jms.DeliveryMode.NON_PERSISTENT, 9, 1000, now));

        ActiveMQTextMessage zipped = new ActiveMQTextMessage();
        zipped.setText("compressed " + "text ".repeat(500));
        send(zipped, queue, javax.jms.DeliveryMode.PERSISTENT, 4, 0, now);
        zipped.compress();
        print("text-compressed", zipped);

        ActiveMQMapMessage zippedMap = new ActiveMQMapMessage();
        zippedMap.setString("k", "v ".repeat(500));
        send(zippedMap, queue, javax.jms.DeliveryMode.PERSISTENT, 4, 0, now);
        zippedMap.compress();
        print("map-compressed", zippedMap);
    }

    // ---- consume ---------------------------------------------------------------------------

    private static void out(String label, String key, Object value) throws Exception {
        String cls = value == null ? "null" : value.getClass().getSimpleName();
        System.out.println(label + " " + key + " " + cls + " " + (value == null ? "-" : text(value)));
    }

    private interface Getter {
        Object get() throws Exception;
    }

    private static void read(String label, String key, Getter getter) throws Exception {
        Object value;
        try {
            value = getter.get();
        } catch (Exception e) {
            System.out.println(label + " " + key + " !" + e.getClass().getSimpleName() + " " + text(String.valueOf(e.getMessage())));
            return;
        }
        out(label, key, value);
    }

    private static void consume() throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, "US-ASCII"));
        String line;
        while ((line = in.readLine()) != null) {
            String[] parts = line.split(" ");
            String label = parts[0];
            byte[] data = new byte[parts[1].length() / 2];
            for (int i = 0; i < data.length; i++) {
                data[i] = (byte) Integer.parseInt(parts[1].substring(2 * i, 2 * i + 2), 16);
            }
            ActiveMQMessage m = (ActiveMQMessage) format().unmarshal(new ByteSequence(data));
            m.setReadOnlyBody(true);
            m.setReadOnlyProperties(true);
            out(label, "class", m.getClass().getSimpleName());
            read(label, "JMSMessageID", m::getJMSMessageID);
            read(label, "JMSDestination", m::getJMSDestination);
            read(label, "JMSReplyTo", m::getJMSReplyTo);
            read(label, "JMSCorrelationID", m::getJMSCorrelationID);
            read(label, "JMSType", m::getJMSType);
            read(label, "JMSPriority", m::getJMSPriority);
            read(label, "JMSExpiration", m::getJMSExpiration);
            read(label, "JMSDeliveryMode", m::getJMSDeliveryMode);
            read(label, "JMSTimestamp", m::getJMSTimestamp);
            read(label, "JMSRedelivered", m::getJMSRedelivered);
            read(label, "JMSXDeliveryCount", () -> m.getIntProperty("JMSXDeliveryCount"));
            read(label, "JMSXGroupID", () -> m.getStringProperty("JMSXGroupID"));
            read(label, "JMSXGroupSeq", () -> m.getIntProperty("JMSXGroupSeq"));
            read(label, "JMSXUserID", () -> m.getStringProperty("JMSXUserID"));
            List<String> names = new ArrayList<>();
            for (Enumeration<?> e = m.getPropertyNames(); e.hasMoreElements();) {
                names.add((String) e.nextElement());
            }
            Collections.sort(names);
            for (String name : names) {
                read(label, "prop:" + name, () -> m.getObjectProperty(name));
            }
            if (m instanceof ActiveMQTextMessage) {
                read(label, "body", ((ActiveMQTextMessage) m)::getText);
            } else if (m instanceof ActiveMQBytesMessage) {
                ActiveMQBytesMessage b = (ActiveMQBytesMessage) m;
                byte[] body = new byte[(int) b.getBodyLength()];
                b.readBytes(body);
                out(label, "body", body);
            } else if (m instanceof ActiveMQMapMessage) {
                ActiveMQMapMessage mm = (ActiveMQMapMessage) m;
                List<String> keys = new ArrayList<>();
                for (Enumeration<?> e = mm.getMapNames(); e.hasMoreElements();) {
                    keys.add((String) e.nextElement());
                }
                Collections.sort(keys);
                for (String key : keys) {
                    read(label, "map:" + key, () -> mm.getObject(key));
                }
            } else if (m instanceof ActiveMQStreamMessage) {
                ActiveMQStreamMessage s = (ActiveMQStreamMessage) m;
                for (int i = 0;; i++) {
                    Object value;
                    try {
                        value = s.readObject();
                    } catch (MessageEOFException eof) {
                        break;
                    }
                    out(label, "stream:" + i, value);
                }
            } else if (m instanceof ActiveMQObjectMessage) {
                ActiveMQObjectMessage o = (ActiveMQObjectMessage) m;
                o.setTrustedPackages(List.of("java.util", "java.lang"));  // as a consumer would
                read(label, "body", o::getObject);
            }
        }
    }

    public static void main(String[] args) throws Exception {
        if (args.length > 0 && args[0].equals("consume")) {
            consume();
        } else {
            produce();
        }
    }
}
