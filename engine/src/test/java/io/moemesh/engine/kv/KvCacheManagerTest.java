package io.moemesh.engine.kv;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.stream.IntStream;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

class KvCacheManagerTest {
  static final int PAGE = 4;

  static int[] tokens(int from, int n) {
    return IntStream.range(from, from + n).toArray();
  }

  @Nested
  class Allocation {
    @Test
    void growsPageByPageAndFreesBackToAnEmptyPool() {
      var kv = new KvCacheManager(4, PAGE, "m", true);
      assertThat(kv.allocate("a", null, 5)).isTrue();
      assertThat(kv.blockTable("a")).hasSize(2);
      assertThat(kv.allocate("a", null, 8)).isTrue();
      assertThat(kv.blockTable("a")).as("position 7 still fits page 2").hasSize(2);
      assertThat(kv.allocate("a", null, 9)).isTrue();
      assertThat(kv.usage().usedPages()).isEqualTo(3);
      kv.free("a");
      assertThat(kv.usage()).isEqualTo(new KvCacheUsage(4, PAGE, 0, 0, 4, 0, 0));
    }

    @Test
    void refusesWithoutChangingAnythingWhenPagesRunOut() {
      var kv = new KvCacheManager(3, PAGE, "m", true);
      assertThat(kv.allocate("a", null, 8)).isTrue();
      assertThat(kv.allocate("b", null, 8)).isFalse();
      assertThat(kv.holds("b")).isFalse();
      assertThat(kv.allocate("a", null, 13)).isFalse();
      assertThat(kv.blockTable("a")).hasSize(2);
      assertThat(kv.numAllocatablePages()).isEqualTo(1);
    }

    @Test
    void givesEveryPageToOneHolderAtATime() {
      var kv = new KvCacheManager(6, PAGE, "m", false);
      kv.allocate("a", null, 12);
      kv.allocate("b", null, 12);
      assertThat(IntStream.concat(IntStream.of(kv.blockTable("a")), IntStream.of(kv.blockTable("b"))).distinct().count()).isEqualTo(6);
    }

    @Test
    void rejectsAnEmptyPool() {
      assertThatThrownBy(() -> new KvCacheManager(0, PAGE, "m", true)).hasMessageContaining("≥ 1 page");
    }
  }

  @Nested
  class PrefixCaching {
    @Test
    void aFreedPromptsFullPagesServeTheNextPromptWithThatPrefix() {
      var kv = new KvCacheManager(8, PAGE, "m", true);
      int[] prompt = tokens(10, 10);
      kv.allocate("a", null, 10);
      kv.cacheFullPages("a", prompt, 10);
      int[] aPages = kv.blockTable("a");
      kv.free("a");
      assertThat(kv.usage().cachedPages()).as("2 full pages stay cached; the partial third is free").isEqualTo(2);

      PrefixHit hit = kv.findPrefix(prompt, 10);
      assertThat(hit.pageIds()).containsExactly(aPages[0], aPages[1]);
      assertThat(hit.chainHash()).isEqualTo(PageHashes.chain("m", prompt, PAGE, 2)[1]);
      assertThat(kv.allocate("b", hit, 11)).isTrue();
      assertThat(kv.blockTable("b")).startsWith(aPages[0], aPages[1]).hasSize(3);
      assertThat(kv.usage().cachedPages()).isZero();
    }

    @Test
    void sharedPagesAreCountedOnceAndFreedByTheirLastHolder() {
      var kv = new KvCacheManager(8, PAGE, "m", true);
      int[] prompt = tokens(0, 8);
      kv.allocate("a", null, 8);
      kv.cacheFullPages("a", prompt, 8);
      kv.allocate("b", kv.findPrefix(prompt, 8), 9);
      assertThat(kv.usage().usedPages()).isEqualTo(3);
      kv.free("a");
      assertThat(kv.usage().usedPages()).as("b still holds the shared pages").isEqualTo(3);
      kv.free("b");
      assertThat(kv.usage().usedPages()).isZero();
      assertThat(kv.usage().cachedPages()).isEqualTo(2);
    }

    @Test
    void aDifferentTokenModelOrEarlierPageMisses() {
      var kv = new KvCacheManager(8, PAGE, "m", true);
      int[] prompt = tokens(0, 8);
      kv.allocate("a", null, 8);
      kv.cacheFullPages("a", prompt, 8);
      kv.free("a");
      int[] secondDiffers = prompt.clone();
      secondDiffers[5] = 99;
      assertThat(kv.findPrefix(secondDiffers, 8).numPages()).isEqualTo(1);
      int[] firstDiffers = prompt.clone();
      firstDiffers[0] = 99;
      assertThat(kv.findPrefix(firstDiffers, 8).numPages()).as("page 2's key includes page 1's chain").isZero();
      var other = new KvCacheManager(8, PAGE, "other-model", true);
      assertThat(PageHashes.seed("m")).isNotEqualTo(PageHashes.seed("other-model"));
      assertThat(other.findPrefix(prompt, 8).numPages()).isZero();
    }

    @Test
    void evictsLeastRecentlyFreedPagesFirstAndTailsBeforeHeads() {
      var kv = new KvCacheManager(4, PAGE, "m", true);
      int[] a = tokens(0, 8), b = tokens(100, 8);
      kv.allocate("a", null, 8);
      kv.cacheFullPages("a", a, 8);
      kv.free("a");
      kv.allocate("b", null, 8);
      kv.cacheFullPages("b", b, 8);
      kv.free("b");
      assertThat(kv.usage().cachedPages()).isEqualTo(4);
      kv.allocate("c", null, 4); // evicts a's tail page, the oldest freed
      assertThat(kv.findPrefix(a, 8).numPages()).isEqualTo(1);
      assertThat(kv.findPrefix(b, 8).numPages()).isEqualTo(2);
      kv.allocate("d", null, 4); // then a's head
      assertThat(kv.findPrefix(a, 8).numPages()).isZero();
      assertThat(kv.findPrefix(b, 8).numPages()).isEqualTo(2);
    }

    @Test
    void countsQueriedAndHitTokens() {
      var kv = new KvCacheManager(8, PAGE, "m", true);
      int[] prompt = tokens(0, 8);
      kv.allocate("a", null, 8);
      kv.cacheFullPages("a", prompt, 8);
      kv.findPrefix(prompt, 7);
      assertThat(kv.usage().queriedTokens()).isEqualTo(7);
      assertThat(kv.usage().hitTokens()).isEqualTo(4);
      assertThat(kv.usage().prefixHitRate()).isEqualTo(4.0 / 7);
    }

    @Test
    void offNeverHits() {
      var kv = new KvCacheManager(8, PAGE, "m", false);
      int[] prompt = tokens(0, 8);
      kv.allocate("a", null, 8);
      kv.cacheFullPages("a", prompt, 8);
      kv.free("a");
      assertThat(kv.findPrefix(prompt, 8).numPages()).isZero();
      assertThat(kv.usage().freePages()).isEqualTo(8);
    }
  }

  @Nested
  class Speculation {
    /** With lookahead keys a page is cached with the token after it, which its MTP-layer KV depends on. */
    @Test
    void aPageMatchesOnlyPromptsThatContinueTheSameWay() {
      var kv = new KvCacheManager(16, PAGE, "m", true, true);
      int[] a = tokens(10, 9); // pages [10..13], [14..17], then 18
      kv.allocate("a", null, 9);
      kv.cacheFullPages("a", java.util.Arrays.copyOf(a, 8), 8);
      assertThat(kv.usage().usedPages()).isEqualTo(3);
      kv.cacheFullPages("a", a, 8); // now the token after page 2 is known
      kv.free("a");
      assertThat(kv.findPrefix(a, 9).numPages()).isEqualTo(2);
      int[] b = a.clone();
      b[8] = 99; // the same 8 tokens, another next token
      assertThat(kv.findPrefix(b, 9).numPages()).as("page 2's MTP KV was computed for 18").isEqualTo(1);
      assertThat(kv.findPrefix(java.util.Arrays.copyOf(a, 8), 8).numPages()).as("no next token to check").isEqualTo(1);
    }

    @Test
    void trimHandsBackThePagesPastTheTokens() {
      var kv = new KvCacheManager(8, PAGE, "m", false, true);
      kv.allocate("a", null, 14); // 4 pages: a verification's drafts and lookahead
      kv.trim("a", 6); // 2 drafts rejected: positions [0, 6) stay
      assertThat(kv.blockTable("a")).hasSize(2);
      assertThat(kv.usage().freePages()).isEqualTo(6);
      kv.trim("a", 9);
      assertThat(kv.blockTable("a")).as("trim never grows").hasSize(2);
      kv.free("a");
      assertThat(kv.usage().usedPages()).isZero();
    }
  }
}
