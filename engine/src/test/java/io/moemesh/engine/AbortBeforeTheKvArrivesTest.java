package io.moemesh.engine;

import static io.moemesh.engine.SchedulerFixture.request;
import static org.assertj.core.api.Assertions.assertThat;

import io.moemesh.engine.kv.KvCacheManager;
import io.moemesh.model.sampling.SampledToken;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/**
 * Decode role, the stages before a request's prompt KV is in its pages: queued (no pages, no load) and loading
 * (pages reserved, the connector writing them). An abort in either leaves no page behind and starts no load.
 */
class AbortBeforeTheKvArrivesTest {
  final KvCacheManager kv = new KvCacheManager(4, 4, "test-model", false); // 16 tokens in all
  final Scheduler scheduler = new Scheduler(SchedulerConfig.defaults(), kv, SchedulerFixture.LIMITS);

  static GenerationRequest imported(String id, int promptLength) {
    return request(id, promptLength, 4).withHandoff(new KvHandoff.Import(new SampledToken(5, Optional.empty()), 0, KvHandoff.OnLoadFailure.FAIL));
  }

  @Test
  void aRequestQueuedBehindFullKvIsAbortedWithoutPagesAndNeverLoads() {
    scheduler.add(imported("loading", 11)); // prompt + first token: 12 tokens, 3 pages
    scheduler.add(imported("queued", 8)); // 9 tokens, 3 pages: only 1 is free
    assertThat(scheduler.schedule().loads()).extracting(SchedulerOutput.KvLoad::requestId).containsExactly("loading");
    assertThat(scheduler.status("queued")).contains(RequestStatus.WAITING);

    assertThat(scheduler.abort("queued").orElseThrow().status()).isEqualTo(RequestStatus.FINISHED_ABORTED);
    assertThat(kv.usage().usedPages()).as("the loading request's only").isEqualTo(3);
    assertThat(scheduler.kvLoaded("loading", KvLoadResult.LOADED)).isEmpty();
    assertThat(scheduler.schedule().loads()).as("the aborted request is gone, not admitted when pages free up").isEmpty();
    assertThat(scheduler.numWaiting() + scheduler.numLoadingKv()).isZero();
  }

  @Test
  void aLoadingRequestAbortedKeepsItsPagesUntilTheConnectorReportsThenFreesThem() {
    scheduler.add(imported("loading", 11));
    assertThat(scheduler.schedule().loads()).hasSize(1);
    assertThat(scheduler.abort("loading").orElseThrow().status()).isEqualTo(RequestStatus.FINISHED_ABORTED);
    assertThat(kv.usage().usedPages()).as("the connector may still write them").isEqualTo(3);
    assertThat(scheduler.hasRequests()).isFalse();

    assertThat(scheduler.kvLoaded("loading", KvLoadResult.failed(KvLoadResult.Reason.CANCELLED, "CANCELLED: the request ended before its KV was loaded"))).isEmpty();
    assertThat(kv.usage().usedPages()).isZero();
    assertThat(scheduler.numLoadingKv()).isZero();
  }
}
