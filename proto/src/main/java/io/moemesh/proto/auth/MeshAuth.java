package io.moemesh.proto.auth;

import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.ForwardingClientCall;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.time.Clock;
import java.time.Duration;
import java.util.HexFormat;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * Service-to-service authentication: every internal gRPC call carries {@code x-moemesh-auth: v1.<unix
 * seconds>.<HMAC-SHA256(key, "v1|" + seconds + "|" + full method name)>}, and every internal server refuses a call
 * whose token is missing, malformed, for another method, or more than {@link #MAX_SKEW} from its clock. A token seen
 * in a log opens one method for two minutes, never the mesh; the key itself never travels.
 *
 * <p>Chosen over mutual TLS because it needs no certificate authority, rotation or per-pod certificates (one Secret),
 * and over a bare bearer token because a token is bound to a method and a time. It authenticates, it does not encrypt:
 * on a cluster, NetworkPolicies keep the ports private, and a service mesh's mTLS adds encryption if required.
 */
public final class MeshAuth {
  public static final Metadata.Key<String> HEADER = Metadata.Key.of("x-moemesh-auth", Metadata.ASCII_STRING_MARSHALLER);
  public static final Duration MAX_SKEW = Duration.ofMinutes(2);
  private static final String VERSION = "v1";

  private final SecretKeySpec key;
  private final Clock clock;

  public MeshAuth(MeshKey key) {
    this(key, Clock.systemUTC());
  }

  MeshAuth(MeshKey key, Clock clock) {
    this.key = new SecretKeySpec(key.bytes(), "HmacSHA256");
    this.clock = clock;
  }

  /** The token for one call of {@code fullMethodName} (e.g. {@code moemesh.kvstore.v1.KvStore/Get}) now. */
  public String token(String fullMethodName) {
    long seconds = clock.instant().getEpochSecond();
    return VERSION + "." + seconds + "." + mac(seconds, fullMethodName);
  }

  /** Null if {@code token} admits a call of {@code fullMethodName} now, else why not (for the UNAUTHENTICATED status). */
  public String refusal(String token, String fullMethodName) {
    if (token == null) return "missing mesh credentials (" + HEADER.name() + ")";
    String[] parts = token.split("\\.", -1);
    if (parts.length != 3 || !parts[0].equals(VERSION)) return "malformed mesh credentials";
    long seconds;
    try {
      seconds = Long.parseLong(parts[1]);
    } catch (NumberFormatException e) {
      return "malformed mesh credentials";
    }
    if (Math.abs(clock.instant().getEpochSecond() - seconds) > MAX_SKEW.toSeconds()) return "expired mesh credentials";
    byte[] expected = mac(seconds, fullMethodName).getBytes(StandardCharsets.US_ASCII);
    return MessageDigest.isEqual(expected, parts[2].getBytes(StandardCharsets.US_ASCII)) ? null : "invalid mesh credentials";
  }

  /** Adds a fresh token to every call through a channel. */
  public ClientInterceptor clientInterceptor() {
    return new ClientInterceptor() {
      @Override
      public <Q, R> ClientCall<Q, R> interceptCall(MethodDescriptor<Q, R> method, CallOptions options, Channel next) {
        return new ForwardingClientCall.SimpleForwardingClientCall<>(next.newCall(method, options)) {
          @Override
          public void start(Listener<R> listener, Metadata headers) {
            headers.put(HEADER, token(method.getFullMethodName()));
            super.start(listener, headers);
          }
        };
      }
    };
  }

  private String mac(long seconds, String fullMethodName) {
    try {
      Mac mac = Mac.getInstance("HmacSHA256");
      mac.init(key);
      return HexFormat.of().formatHex(mac.doFinal((VERSION + "|" + seconds + "|" + fullMethodName).getBytes(StandardCharsets.UTF_8)));
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("HmacSHA256 is unavailable", e);
    }
  }
}
