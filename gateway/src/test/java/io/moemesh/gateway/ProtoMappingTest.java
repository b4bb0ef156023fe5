package io.moemesh.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import io.grpc.Status;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/** Backend failures as clients see them: the right status, and no internal address in the message. */
class ProtoMappingTest {
  static final Duration RETRY = Duration.ofSeconds(1);

  @Test
  void deadlinesAndUnavailableReplicasNameNoAddress() {
    var deadline = ProtoMapping.toApiError(Status.DEADLINE_EXCEEDED.withDescription("deadline exceeded after 59.998s. "
        + "[closed=[], open=[[buffered_nanos=1234, remote_addr=localhost/127.0.0.1:19101]]]").asRuntimeException(), RETRY);
    assertThat(deadline.status()).isEqualTo(504);
    assertThat(deadline.getMessage()).contains("did not finish in time").contains("59.998s")
        .doesNotContain("127.0.0.1").doesNotContain("19101").doesNotContain("remote_addr");

    var unavailable = ProtoMapping.toApiError(Status.UNAVAILABLE.withDescription(
        "io exception: Connection refused: decode-1.decode.moemesh.svc.cluster.local/10.1.2.3:9001").asRuntimeException(), RETRY);
    assertThat(unavailable.status()).isEqualTo(503);
    assertThat(unavailable.getMessage()).contains("Connection refused").doesNotContain("10.1.2.3").doesNotContain("9001")
        .doesNotContain("cluster.local");

    var ipv6 = ProtoMapping.toApiError(new BackendException("kv-store [::1]:19200 answered nothing"), RETRY);
    assertThat(ipv6.getMessage()).contains("answered nothing").doesNotContain("::1").doesNotContain("19200");
  }

  @Test
  void theEnginesOwnValidationMessagesPassThrough() {
    var invalid = ProtoMapping.toApiError(Status.INVALID_ARGUMENT.withDescription("top_p must be in (0, 1], got 1.5")
        .asRuntimeException(), RETRY);
    assertThat(invalid.status()).isEqualTo(400);
    assertThat(invalid.getMessage()).isEqualTo("top_p must be in (0, 1], got 1.5");
  }
}
