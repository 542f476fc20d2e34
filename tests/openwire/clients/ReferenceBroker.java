// ReferenceBroker: ActiveMQ 5.17's own broker (Debian's activemq-broker.jar) embedded as the
// reference the Java client tests and the OpenWire benchmark run against.
//
// Theory of operation: one BrokerService, persistence off (or KahaDB in the directory given
// as the first argument), JMX off, one transport connector on tcp://127.0.0.1:0. Queues keep
// priority order (prioritizedMessages), as JMS asks a provider to try to. Once started it
// prints "port N" (the bound port) on stdout and runs until stdin closes, so the process
// that started it stops it by closing the pipe (or by dying).
import java.io.File;
import java.net.URI;
import java.util.Arrays;

import org.apache.activemq.broker.BrokerService;
import org.apache.activemq.broker.TransportConnector;
import org.apache.activemq.broker.region.policy.PolicyEntry;
import org.apache.activemq.broker.region.policy.PolicyMap;
import org.apache.activemq.store.kahadb.KahaDBPersistenceAdapter;

public final class ReferenceBroker {
    private ReferenceBroker() {}

    public static void main(String[] args) throws Exception {
        BrokerService broker = new BrokerService();
        broker.setBrokerName("reference");
        broker.setUseJmx(false);
        broker.setUseShutdownHook(false);
        if (args.length > 0) {
            KahaDBPersistenceAdapter kahadb = new KahaDBPersistenceAdapter();
            kahadb.setDirectory(new File(args[0]));
            broker.setPersistenceAdapter(kahadb);
            broker.setDataDirectoryFile(new File(args[0]));
        } else {
            broker.setPersistent(false);
        }
        PolicyEntry policy = new PolicyEntry();
        policy.setQueue(">");
        policy.setPrioritizedMessages(true);
        PolicyMap policies = new PolicyMap();
        policies.setPolicyEntries(Arrays.asList(policy));
        broker.setDestinationPolicy(policies);
        TransportConnector connector = broker.addConnector("tcp://127.0.0.1:0");
        broker.start();
        broker.waitUntilStarted();
        URI bound = connector.getConnectUri();
        System.out.println("port " + bound.getPort());
        System.out.flush();
        while (System.in.read() >= 0) {
            // runs until the parent closes stdin
        }
        broker.stop();
        broker.waitUntilStopped();
    }
}
