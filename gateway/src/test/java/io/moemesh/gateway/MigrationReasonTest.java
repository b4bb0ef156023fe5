package io.moemesh.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import io.grpc.Status;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class MigrationReasonTest {
  @Test
  void aBrokenConnectionMovesTheStreamAndTheRequestsOwnFailureDoesNot() {
    assertThat(MigrationReason.of(Status.UNAVAILABLE.withDescription("io exception").asRuntimeException())).contains(MigrationReason.UNAVAILABLE);
    assertThat(MigrationReason.of(Status.UNKNOWN.withDescription("channel closed").asRuntimeException())).contains(MigrationReason.UNAVAILABLE);
    assertThat(MigrationReason.of(Status.UNKNOWN.withDescription("NullPointerException").asRuntimeException())).isEqualTo(Optional.empty());
    assertThat(MigrationReason.of(Status.INVALID_ARGUMENT.withDescription("channel closed").asRuntimeException())).isEqualTo(Optional.empty());
    assertThat(MigrationReason.of(new IllegalStateException("channel closed"))).isEqualTo(Optional.empty());
  }
}
