package io.moemesh.proto.auth;

import static org.assertj.core.api.Assertions.assertThat;

import io.grpc.Status;
import java.net.ConnectException;
import org.junit.jupiter.api.Test;

/** {@link MeshChannels#describe}: a failed call in one line, for messages that reach logs and clients. */
class MeshChannelsTest {
  @Test
  void aStatusIsItsCodeDescriptionAndCausesFirstLineWithoutAStackTrace() {
    var refused = Status.UNAVAILABLE.withDescription("io exception").withCause(new ConnectException("Connection refused: localhost/127.0.0.1:9501"));
    assertThat(MeshChannels.describe(refused)).isEqualTo("UNAVAILABLE: io exception (Connection refused: localhost/127.0.0.1:9501)");
    assertThat(MeshChannels.describe(Status.DEADLINE_EXCEEDED)).isEqualTo("DEADLINE_EXCEEDED");
    assertThat(MeshChannels.describe(Status.INTERNAL.withCause(new IllegalStateException("first\nsecond")))).isEqualTo("INTERNAL (first)");
  }
}
