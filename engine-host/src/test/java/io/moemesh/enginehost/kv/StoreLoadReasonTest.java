package io.moemesh.enginehost.kv;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.grpc.Status;
import io.moemesh.engine.KvLoadResult;
import io.moemesh.engine.KvLoadResult.Reason;
import io.moemesh.enginehost.telemetry.KvTransferMetrics.FailureReason;
import java.util.Map;
import org.junit.jupiter.api.Test;

class StoreLoadReasonTest {
  @Test
  void aFailedGetsStatusBecomesTheEnginesReasonThroughTheMetersOne() {
    Map<Status.Code, Reason> expected = Map.of(
        Status.Code.UNAVAILABLE, Reason.STORE_UNAVAILABLE,
        Status.Code.DEADLINE_EXCEEDED, Reason.TIMEOUT,
        Status.Code.NOT_FOUND, Reason.NOT_FOUND,
        Status.Code.CANCELLED, Reason.CANCELLED,
        Status.Code.FAILED_PRECONDITION, Reason.REJECTED,
        Status.Code.RESOURCE_EXHAUSTED, Reason.ERROR, // a frame over the channel's size limit, not a full store
        Status.Code.INTERNAL, Reason.ERROR);
    expected.forEach((code, reason) ->
        assertThat(StoreLoad.loadReason(FailureReason.of(code.toStatus().asRuntimeException()))).as(code.name()).isEqualTo(reason));
    assertThat(StoreLoad.loadReason(FailureReason.INVALID_OBJECT)).isEqualTo(Reason.INVALID_OBJECT);
  }

  @Test
  void aFailedLoadNamesItsReasonAndDetail() {
    assertThatThrownBy(() -> KvLoadResult.failed(null, "gone")).isInstanceOf(NullPointerException.class).hasMessage("reason");
    assertThatThrownBy(() -> KvLoadResult.failed(Reason.NOT_FOUND, null)).isInstanceOf(NullPointerException.class).hasMessage("detail");
  }
}
