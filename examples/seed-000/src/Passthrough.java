// Seed 000's HTTP passthrough service on Netty: every request received on --port is sent
// unchanged (method, path, headers, body) to the back-end at --upstream, and the back-end's
// answer goes back to the client, as the seed's Ballerina passthrough does.
//
//   java -Xms2g -Xmx2g -cp 'build/V/lib/*:build/V/classes' Passthrough --port 9000 --upstream 127.0.0.1:9001
//
// Each client connection gets one keep-alive connection to the back-end, opened on the same
// event loop when the client connects; requests on a connection are answered in order (HTTP/1.1
// without pipelining, as the load generator sends them), so one back-end connection per client
// connection keeps them in step. Bodies are aggregated (up to 16 MiB): the seed's messages are
// 500 B to 10 kB. Built against two Netty releases by build.sh; the source is the same.

import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.nio.NioEventLoopGroup;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpClientCodec;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.util.Version;
import java.util.ArrayDeque;

public final class Passthrough {
    private static final int MAX_BODY = 16 * 1024 * 1024;

    private static String upstreamHost;
    private static int upstreamPort;

    public static void main(String[] args) throws Exception {
        int port = 0;
        String upstream = null;
        int threads = 0;
        for (int i = 0; i + 1 < args.length; i += 2) {
            switch (args[i]) {
                case "--port" -> port = Integer.parseInt(args[i + 1]);
                case "--upstream" -> upstream = args[i + 1];
                case "--threads" -> threads = Integer.parseInt(args[i + 1]);
                default -> usage("unknown option " + args[i]);
            }
        }
        if (port <= 0 || upstream == null || !upstream.contains(":")) {
            usage("--port and --upstream HOST:PORT are required");
        }
        int colon = upstream.lastIndexOf(':');
        upstreamHost = upstream.substring(0, colon);
        upstreamPort = Integer.parseInt(upstream.substring(colon + 1));

        // 0 threads: Netty's default, twice the available processors.
        EventLoopGroup boss = new NioEventLoopGroup(1);
        EventLoopGroup workers = new NioEventLoopGroup(threads);
        try {
            ServerBootstrap b = new ServerBootstrap()
                    .group(boss, workers)
                    .channel(NioServerSocketChannel.class)
                    .option(ChannelOption.SO_BACKLOG, 4096)
                    .childOption(ChannelOption.TCP_NODELAY, true)
                    .childOption(ChannelOption.AUTO_READ, false)
                    .childHandler(new ChannelInitializer<SocketChannel>() {
                        @Override
                        protected void initChannel(SocketChannel ch) {
                            ch.pipeline().addLast(
                                    new HttpServerCodec(),
                                    new HttpObjectAggregator(MAX_BODY),
                                    new Frontend());
                        }
                    });
            Channel ch = b.bind("127.0.0.1", port).sync().channel();
            Version v = Version.identify().get("netty-codec-http");
            String netty = v == null ? "?" : v.artifactVersion();
            System.err.println("passthrough: Netty " + netty + " on 127.0.0.1:" + port
                    + ", upstream " + upstream);
            ch.closeFuture().sync();
        } finally {
            boss.shutdownGracefully();
            workers.shutdownGracefully();
        }
    }

    private static void usage(String why) {
        System.err.println("passthrough: " + why
                + "\nusage: Passthrough --port PORT --upstream HOST:PORT [--threads N]");
        System.exit(2);
    }

    /** A client connection: forwards its requests to its own back-end connection. */
    static final class Frontend extends SimpleChannelInboundHandler<FullHttpRequest> {
        private Channel backend;
        /** Whether each request in flight asked for keep-alive, oldest first. */
        private final ArrayDeque<Boolean> keepAlive = new ArrayDeque<>();

        @Override
        public void channelActive(ChannelHandlerContext ctx) {
            Channel client = ctx.channel();
            Bootstrap b = new Bootstrap()
                    .group(client.eventLoop())
                    .channel(NioSocketChannel.class)
                    .option(ChannelOption.TCP_NODELAY, true)
                    .handler(new ChannelInitializer<SocketChannel>() {
                        @Override
                        protected void initChannel(SocketChannel ch) {
                            ch.pipeline().addLast(
                                    new HttpClientCodec(),
                                    new HttpObjectAggregator(MAX_BODY),
                                    new Backend(client, keepAlive));
                        }
                    });
            ChannelFuture f = b.connect(upstreamHost, upstreamPort);
            backend = f.channel();
            f.addListener((ChannelFutureListener) done -> {
                if (done.isSuccess()) {
                    // Read from the client only once the back-end is there to take the request.
                    client.read();
                } else {
                    client.close();
                }
            });
        }

        @Override
        protected void channelRead0(ChannelHandlerContext ctx, FullHttpRequest req) {
            boolean keep = HttpUtil.isKeepAlive(req);
            keepAlive.add(keep);
            req.headers().set(HttpHeaderNames.HOST, upstreamHost + ":" + upstreamPort);
            // Towards the back-end the connection is always kept open.
            req.headers().remove(HttpHeaderNames.CONNECTION);
            req.setProtocolVersion(HttpVersion.HTTP_1_1);
            backend.writeAndFlush(req.retain()).addListener((ChannelFutureListener) f -> {
                if (f.isSuccess()) {
                    ctx.channel().read();
                } else {
                    f.channel().close();
                    ctx.channel().close();
                }
            });
        }

        @Override
        public void channelInactive(ChannelHandlerContext ctx) {
            if (backend != null) {
                backend.close();
            }
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            ctx.close();
        }
    }

    /** The back-end connection of one client connection: its answers go back to the client. */
    static final class Backend extends SimpleChannelInboundHandler<FullHttpResponse> {
        private final Channel client;
        private final ArrayDeque<Boolean> keepAlive;

        Backend(Channel client, ArrayDeque<Boolean> keepAlive) {
            this.client = client;
            this.keepAlive = keepAlive;
        }

        @Override
        protected void channelRead0(ChannelHandlerContext ctx, FullHttpResponse res) {
            Boolean keep = keepAlive.poll();
            FullHttpResponse out = res.retain();
            if (keep == null || !keep) {
                out.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
                client.writeAndFlush(out).addListener(ChannelFutureListener.CLOSE);
            } else {
                out.headers().remove(HttpHeaderNames.CONNECTION);
                client.writeAndFlush(out);
            }
        }

        @Override
        public void channelInactive(ChannelHandlerContext ctx) {
            if (client.isActive()) {
                if (!keepAlive.isEmpty()) {
                    // The back-end went away with a request unanswered.
                    FullHttpResponse bad = new DefaultFullHttpResponse(
                            HttpVersion.HTTP_1_1, HttpResponseStatus.BAD_GATEWAY);
                    bad.headers().set(HttpHeaderNames.CONTENT_LENGTH, 0);
                    bad.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
                    client.writeAndFlush(bad).addListener(ChannelFutureListener.CLOSE);
                } else {
                    client.close();
                }
            }
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            ctx.close();
        }
    }
}
