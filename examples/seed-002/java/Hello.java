// Seed 002's Java hello world: the JDK's own HTTP server (com.sun.net.httpserver), no
// framework and no build tool, answering "Hello World\n" as text/plain on 127.0.0.1 at the
// port given as the only argument (gatebench's {port}). Exchanges run on a fixed pool of two
// threads per available core; the body is allocated once.
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.Executors;

public final class Hello {
    private static final byte[] HELLO = "Hello World\n".getBytes(StandardCharsets.US_ASCII);

    private static void hello(HttpExchange exchange) throws IOException {
        exchange.getRequestBody().readAllBytes();
        exchange.getResponseHeaders().set("Content-Type", "text/plain");
        exchange.sendResponseHeaders(200, HELLO.length);
        try (OutputStream body = exchange.getResponseBody()) {
            body.write(HELLO);
        }
    }

    public static void main(String[] args) throws IOException {
        if (args.length != 1) {
            System.err.println("usage: java Hello PORT");
            System.exit(2);
        }
        int port = Integer.parseInt(args[0]);
        // The second argument is the listen backlog: room for a burst of new connections.
        HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", port), 4096);
        server.createContext("/", Hello::hello);
        int threads = 2 * Runtime.getRuntime().availableProcessors();
        server.setExecutor(Executors.newFixedThreadPool(threads));
        server.start();
    }
}
