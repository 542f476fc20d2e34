// Marshals sample OpenWire commands with ActiveMQ's own OpenWireFormat (version 12, loose:
// tight encoding and cache off) and prints one line per command: "<label> <stack> <hex>",
// where <label> is the class name, perhaps followed by "/" and a variant, and <stack> says
// whether StackTraceEnabled was on. tests/openwire/test_java_fixtures.py
// compiles and runs this against Debian's activemq-client.jar and checks that ternmq's codec
// decodes each frame and re-encodes it to the same octets.
// With the argument "echo" it reads lines "<stack> <hex>" from stdin instead (frames that
// ternmq encoded), unmarshals each with OpenWireFormat, marshals it again and prints
// "<class> <stack> <hex> <detail>", where <detail> is the hex of a UTF-8 summary of what
// Java read (a TextMessage's text and typed properties, an exception's message).
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.activemq.command.*;
import org.apache.activemq.openwire.OpenWireFormat;
import org.apache.activemq.util.ByteSequence;

public class OpenWireFixtures {
    private static final char[] HEX = "0123456789abcdef".toCharArray();

    static OpenWireFormat format(boolean stackTrace) {  // also used by OpenWireMapping
        OpenWireFormat f = new OpenWireFormat(12);
        f.setTightEncodingEnabled(false);
        f.setCacheEnabled(false);
        f.setSizePrefixDisabled(false);
        f.setStackTraceEnabled(stackTrace);
        return f;
    }

    private static void print(String name, Object command, boolean stackTrace) throws Exception {
        ByteSequence seq = format(stackTrace).marshal(command);
        StringBuilder sb = new StringBuilder();
        for (int i = seq.offset; i < seq.offset + seq.length; i++) {
            int b = seq.data[i] & 0xff;
            sb.append(HEX[b >> 4]).append(HEX[b & 0xf]);
        }
        System.out.println(name + " " + stackTrace + " " + sb);
    }

    static String hex(byte[] data, int offset, int length) {  // also used by OpenWireMapping
        StringBuilder sb = new StringBuilder();
        for (int i = offset; i < offset + length; i++) {
            int b = data[i] & 0xff;
            sb.append(HEX[b >> 4]).append(HEX[b & 0xf]);
        }
        return sb.toString();
    }

    private static String detail(Object command) throws Exception {
        StringBuilder sb = new StringBuilder();
        if (command instanceof MessageDispatch) {
            command = ((MessageDispatch) command).getMessage();
        }
        if (command instanceof ActiveMQTextMessage) {
            sb.append(((ActiveMQTextMessage) command).getText());
        }
        if (command instanceof Message) {
            Map<String, Object> props = new java.util.TreeMap<>(((Message) command).getProperties());
            for (Map.Entry<String, Object> e : props.entrySet()) {
                Object v = e.getValue();
                String value = v instanceof byte[] ? hex((byte[]) v, 0, ((byte[]) v).length) : String.valueOf(v);
                sb.append('|').append(e.getKey()).append('=').append(v.getClass().getSimpleName()).append(':').append(value);
            }
        }
        if (command instanceof ExceptionResponse) {
            Throwable t = ((ExceptionResponse) command).getException();
            sb.append(t.getClass().getName()).append(':').append(t.getMessage());
            sb.append('|').append(t.getStackTrace().length);
        }
        if (command instanceof WireFormatInfo) {
            WireFormatInfo w = (WireFormatInfo) command;
            sb.append(w.getVersion()).append('|').append(w.isTightEncodingEnabled()).append('|')
                .append(w.isCacheEnabled()).append('|').append(w.getMaxInactivityDuration());
        }
        byte[] utf8 = sb.toString().getBytes("UTF-8");
        return utf8.length == 0 ? "-" : hex(utf8, 0, utf8.length);
    }

    private static void echo() throws Exception {
        java.io.BufferedReader in = new java.io.BufferedReader(new java.io.InputStreamReader(System.in, "US-ASCII"));
        String line;
        while ((line = in.readLine()) != null) {
            String[] parts = line.split(" ");
            boolean stackTrace = parts[0].equals("true");
            byte[] data = new byte[parts[1].length() / 2];
            for (int i = 0; i < data.length; i++) {
                data[i] = (byte) Integer.parseInt(parts[1].substring(2 * i, 2 * i + 2), 16);
            }
            Object command = format(stackTrace).unmarshal(new ByteSequence(data));
            String summary = detail(command);
            ByteSequence again = format(stackTrace).marshal(command);
            System.out.println(command.getClass().getSimpleName() + " " + stackTrace + " "
                + hex(again.data, again.offset, again.length) + " " + summary);
        }
    }

    private static <T extends Message> T fill(T m, ProducerId producer, ActiveMQDestination dest) throws Exception {
        m.setCommandId(7);
        m.setResponseRequired(true);
        m.setProducerId(producer);
        m.setDestination(dest);
        m.setMessageId(new MessageId(producer, 42));
        m.setPersistent(true);
        m.setPriority((byte) 4);
        m.setTimestamp(1764000000000L);
        m.setExpiration(1764000060000L);
        m.setCorrelationId("corr-1");
        m.setType("order");
        m.setReplyTo(new ActiveMQTempQueue("ID:host-1-2:1:1"));
        m.setGroupID("g1");
        m.setGroupSequence(3);
        m.setProperty("aBoolean", Boolean.TRUE);
        m.setProperty("aByte", Byte.valueOf((byte) -5));
        m.setProperty("aShort", Short.valueOf((short) 300));
        m.setProperty("anInt", Integer.valueOf(70000));
        m.setProperty("aLong", Long.valueOf(1L << 40));
        m.setProperty("aFloat", Float.valueOf(1.5f));
        m.setProperty("aDouble", Double.valueOf(-2.25));
        m.setProperty("aString", "h\u00e9llo \u0000 \ud83d\ude00");
        return m;
    }

    public static void main(String[] args) throws Exception {
        if (args.length > 0 && args[0].equals("echo")) {
            echo();
            return;
        }
        ConnectionId conn = new ConnectionId("ID:host-1-2:1");
        SessionId session = new SessionId(conn, 1);
        ProducerId producer = new ProducerId(session, 1);
        ConsumerId consumer = new ConsumerId(session, 2);
        ActiveMQQueue queue = new ActiveMQQueue("orders");
        ActiveMQTopic topic = new ActiveMQTopic("prices");

        WireFormatInfo wf = new WireFormatInfo();
        wf.setVersion(12);
        wf.setTightEncodingEnabled(false);
        wf.setCacheEnabled(false);
        wf.setStackTraceEnabled(true);
        wf.setMaxInactivityDuration(30000);
        print("WireFormatInfo", wf, false);

        BrokerInfo broker = new BrokerInfo();
        broker.setBrokerId(new BrokerId("ID:broker-1"));
        broker.setBrokerName("ternmq");
        broker.setBrokerURL("tcp://127.0.0.1:61616");
        broker.setPeerBrokerInfos(new BrokerInfo[0]);
        print("BrokerInfo", broker, false);

        ConnectionInfo ci = new ConnectionInfo(conn);
        ci.setCommandId(1);
        ci.setResponseRequired(true);
        ci.setClientId("client-1");
        ci.setUserName("alice");
        ci.setPassword("secret");
        print("ConnectionInfo", ci, false);

        SessionInfo si = new SessionInfo(session);
        si.setCommandId(2);
        print("SessionInfo", si, false);

        ProducerInfo pi = new ProducerInfo(producer);
        pi.setDestination(queue);
        pi.setWindowSize(1024);
        print("ProducerInfo", pi, false);

        ConsumerInfo coi = new ConsumerInfo(consumer);
        coi.setDestination(topic);
        coi.setSelector("price > 10 AND sym = 'X'");
        coi.setPrefetchSize(1000);
        coi.setSubscriptionName("durable-1");
        coi.setNoLocal(true);
        coi.setPriority((byte) -3);
        print("ConsumerInfo", coi, false);

        print("RemoveInfo", new RemoveInfo(consumer), false);
        print("ShutdownInfo", new ShutdownInfo(), false);
        print("KeepAliveInfo", new KeepAliveInfo(), false);
        Response resp = new Response();
        resp.setCorrelationId(12);
        print("Response", resp, false);

        Exception cause = new IllegalStateException("inner");
        Exception ex = new javax.jms.JMSException("no such queue");
        ex.initCause(cause);
        print("ExceptionResponse", new ExceptionResponse(ex), false);
        print("ExceptionResponse", new ExceptionResponse(ex), true);
        ConnectionError ce = new ConnectionError();
        ce.setException(new java.io.IOException("gone"));
        ce.setConnectionId(conn);
        print("ConnectionError", ce, true);

        ActiveMQTextMessage text = fill(new ActiveMQTextMessage(), producer, queue);
        text.setText("h\u00e9llo, w\u00f6rld \ud83d\ude00 \u0000 end");
        print("ActiveMQTextMessage", text, false);

        ActiveMQBytesMessage bytes = fill(new ActiveMQBytesMessage(), producer, queue);
        bytes.writeBytes(new byte[] {0, 1, 2, (byte) 0xff});
        bytes.writeInt(-1);
        bytes.storeContent();
        print("ActiveMQBytesMessage", bytes, false);

        ActiveMQMapMessage map = fill(new ActiveMQMapMessage(), producer, topic);
        map.setString("name", "widget");
        map.setInt("count", 3);
        map.setChar("c", 'Z');
        map.setBytes("raw", new byte[] {9, 8, 7});
        map.setDouble("price", 9.99);
        map.storeContent();
        print("ActiveMQMapMessage", map, false);

        ActiveMQStreamMessage stream = fill(new ActiveMQStreamMessage(), producer, queue);
        stream.writeString("first");
        stream.writeLong(-9L);
        stream.writeBoolean(false);
        stream.writeObject(null);
        stream.writeFloat(0.25f);
        stream.storeContent();
        print("ActiveMQStreamMessage", stream, false);

        ActiveMQObjectMessage object = fill(new ActiveMQObjectMessage(), producer, queue);
        object.setObject(new ArrayList<>(java.util.List.of("a", "b")));
        object.storeContent();
        print("ActiveMQObjectMessage", object, false);

        ActiveMQTextMessage zipped = fill(new ActiveMQTextMessage(), producer, queue);
        zipped.setText("compressed " + "text ".repeat(200));
        zipped.compress();
        print("ActiveMQTextMessage/compressed", zipped, false);

        ActiveMQBytesMessage zippedBytes = fill(new ActiveMQBytesMessage(), producer, queue);
        zippedBytes.writeBytes("bytes ".repeat(200).getBytes("US-ASCII"));
        zippedBytes.storeContent();
        zippedBytes.compress();
        print("ActiveMQBytesMessage/compressed", zippedBytes, false);

        ActiveMQMessage plain = fill(new ActiveMQMessage(), producer, queue);
        print("ActiveMQMessage", plain, false);

        MessageDispatch md = new MessageDispatch();
        md.setConsumerId(consumer);
        md.setDestination(queue);
        ActiveMQTextMessage dispatched = fill(new ActiveMQTextMessage(), producer, queue);
        dispatched.setText("to you");
        md.setMessage(dispatched);
        md.setRedeliveryCounter(2);
        print("MessageDispatch", md, false);

        MessageAck ack = new MessageAck();
        ack.setAckType(MessageAck.STANDARD_ACK_TYPE);
        ack.setConsumerId(consumer);
        ack.setDestination(queue);
        ack.setFirstMessageId(new MessageId(producer, 40));
        ack.setLastMessageId(new MessageId(producer, 42));
        ack.setMessageCount(3);
        LocalTransactionId tx = new LocalTransactionId(conn, 5);
        ack.setTransactionId(tx);
        print("MessageAck", ack, false);

        print("TransactionInfo", new TransactionInfo(conn, tx, TransactionInfo.COMMIT_ONE_PHASE), false);
        XATransactionId xid = new XATransactionId();
        xid.setFormatId(1);
        xid.setGlobalTransactionId(new byte[] {1, 2, 3});
        xid.setBranchQualifier(new byte[] {4});
        print("TransactionInfo", new TransactionInfo(conn, xid, TransactionInfo.BEGIN), false);

        DestinationInfo di = new DestinationInfo(conn, DestinationInfo.ADD_OPERATION_TYPE,
            new ActiveMQTempTopic("ID:host-1-2:1:2"));
        print("DestinationInfo", di, false);

        RemoveSubscriptionInfo rs = new RemoveSubscriptionInfo();
        rs.setConnectionId(conn);
        rs.setClientId("client-1");
        rs.setSubscriptionName("durable-1");
        print("RemoveSubscriptionInfo", rs, false);

        MessagePull pull = new MessagePull();
        pull.setConsumerId(consumer);
        pull.setDestination(queue);
        pull.setTimeout(-1);
        print("MessagePull", pull, false);

        ConnectionControl cc = new ConnectionControl();
        cc.setFaultTolerant(true);
        cc.setReconnectTo("tcp://other:61616");
        print("ConnectionControl", cc, false);

        ConsumerControl cctl = new ConsumerControl();
        cctl.setConsumerId(consumer);
        cctl.setDestination(queue);
        cctl.setPrefetch(10);
        cctl.setStart(true);
        print("ConsumerControl", cctl, false);

        ProducerAck pack = new ProducerAck(producer, 256);
        print("ProducerAck", pack, false);
        IntegerResponse ir = new IntegerResponse(7);
        print("IntegerResponse", ir, false);
        ControlCommand cmd = new ControlCommand();
        cmd.setCommand("shutdown");
        print("ControlCommand", cmd, false);
    }
}
