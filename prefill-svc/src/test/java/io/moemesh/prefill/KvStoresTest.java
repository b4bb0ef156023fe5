package io.moemesh.prefill;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.moemesh.proto.kvstore.v1.StatsResponse;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** Which store a prompt's object goes to: the most free memory, counting this replica's puts since the last Stats. */
class KvStoresTest {
  static final long MIB = 1 << 20;
  final Map<String, StatsResponse> answers = new HashMap<>(); // a store missing here does not answer
  final KvStores stores = new KvStores(List.of("a:1", "b:1", "c:1"), address -> Optional.ofNullable(answers.get(address)));

  static StatsResponse stats(long maxMib, long usedMib) {
    return StatsResponse.newBuilder().setMaxBytes(maxMib * MIB).setUsedBytes(usedMib * MIB).build();
  }

  List<String> picks(int n, long bytes) {
    List<String> picked = new ArrayList<>();
    for (int i = 0; i < n; i++) picked.add(stores.pick(bytes).address);
    return picked;
  }

  @Test
  void beforeAnyStoreHasAnsweredTheyTakeTurns() {
    assertThat(picks(6, MIB)).containsExactly("a:1", "b:1", "c:1", "a:1", "b:1", "c:1");
  }

  @Test
  void theStoreWithTheMostFreeMemoryTakesTheObject() {
    answers.put("a:1", stats(64, 60));
    answers.put("b:1", stats(64, 10));
    answers.put("c:1", stats(128, 100));
    stores.refresh();
    assertThat(stores.pick(MIB).address).isEqualTo("b:1"); // 54 MiB free, against 4 and 28
  }

  @Test
  void aBurstBetweenTwoPollsSpreadsAsTheFreeMemoryEvensOut() {
    answers.put("a:1", stats(64, 0));
    answers.put("b:1", stats(64, 32));
    answers.put("c:1", stats(64, 48));
    stores.refresh();
    // a has 64 free, b 32, c 16: a takes objects until it is down to b's, then the two alternate
    assertThat(picks(8, 8 * MIB)).containsExactly("a:1", "a:1", "a:1", "a:1", "a:1", "b:1", "a:1", "b:1");
    answers.put("a:1", stats(64, 64)); // the next poll: a is full now
    stores.refresh();
    assertThat(stores.pick(MIB).address).isEqualTo("b:1");
  }

  void refresh(int polls) {
    for (int i = 0; i < polls; i++) stores.refresh();
  }

  @Test
  void aStoreThatStoppedAnsweringIsSkippedWhileAnotherAnswers() {
    answers.put("a:1", stats(64, 0));
    answers.put("b:1", stats(64, 63));
    stores.refresh(); // c does not answer
    assertThat(picks(4, MIB)).containsOnly("a:1");
    answers.remove("a:1");
    refresh(KvStores.MISSES_TO_SKIP);
    assertThat(picks(3, 10 * MIB)).as("b answers, nearly full, but is the only one known up").containsOnly("b:1");
    answers.clear();
    refresh(KvStores.MISSES_TO_SKIP);
    assertThat(picks(3, MIB)).as("nobody answers: turns over all of them (the put's error says which store)")
        .containsExactlyInAnyOrder("a:1", "b:1", "c:1");
  }

  @Test
  void aFewLateStatsDoNotTakeAStoreOutOfThePicks() {
    answers.put("a:1", stats(64, 0));
    answers.put("b:1", stats(64, 32));
    answers.put("c:1", stats(64, 48));
    stores.refresh();
    answers.remove("a:1"); // a busy machine: a's Stats misses its deadline, twice
    refresh(2);
    assertThat(picks(3, 8 * MIB)).as("a still has the most free memory by its last figures and this replica's puts")
        .containsExactly("a:1", "a:1", "a:1");
    answers.put("a:1", stats(64, 24)); // it answers again, with the three objects
    stores.refresh();
    // a: 40 free, then 32 against b's 32 (a tie goes to the first listed), then 24: b's turn
    assertThat(picks(3, 8 * MIB)).containsExactly("a:1", "a:1", "b:1");
  }

  @Test
  void oneStoreIsAlwaysThePick() {
    var one = new KvStores(KvStores.parse(" only:9401 "), address -> Optional.empty());
    assertThat(one.pick(MIB).address).isEqualTo("only:9401");
    one.refresh();
    assertThat(one.pick(MIB).address).isEqualTo("only:9401");
  }

  @Test
  void aBadListIsAClearError() {
    assertThatThrownBy(() -> new KvStores(KvStores.parse(" , "), a -> Optional.empty())).hasMessageContaining("no kv-store address");
    assertThatThrownBy(() -> new KvStores(KvStores.parse("a:1,a:1"), a -> Optional.empty())).hasMessageContaining("twice");
  }
}
