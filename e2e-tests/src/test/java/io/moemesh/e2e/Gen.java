package io.moemesh.e2e;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;
import java.util.random.RandomGenerator;

/**
 * A generator of fuzz inputs: a function of a seeded random source, so a case is reproduced by its seed alone. The
 * few combinators below are all the fuzz test needs; a lambda {@code random -> ...} combines generators.
 */
@FunctionalInterface
interface Gen<T> {
  T next(RandomGenerator random);

  default <R> Gen<R> map(Function<? super T, ? extends R> f) {
    return random -> f.apply(next(random));
  }

  default <R> Gen<R> flatMap(Function<? super T, Gen<R>> f) {
    return random -> f.apply(next(random)).next(random);
  }

  /** Null (an absent field or header) with probability {@code p}. */
  default Gen<T> orNull(double p) {
    return random -> random.nextDouble() < p ? null : next(random);
  }

  /** Lists of {@code min} to {@code max} values, each size as likely. */
  default Gen<List<T>> list(int min, int max) {
    return random -> {
      int n = random.nextInt(min, max + 1);
      List<T> out = new ArrayList<>(n);
      for (int i = 0; i < n; i++) out.add(next(random));
      return out;
    };
  }

  default Gen<List<T>> list(int max) {
    return list(0, max);
  }

  static <T> Gen<T> just(T value) {
    return random -> value;
  }

  @SafeVarargs
  static <T> Gen<T> of(T... values) {
    return random -> values[random.nextInt(values.length)];
  }

  static <T> Gen<T> of(List<T> values) {
    return random -> values.get(random.nextInt(values.size()));
  }

  /** From {@code min} to {@code max}, both included. */
  static Gen<Integer> ints(int min, int max) {
    return random -> random.nextInt(min, max + 1);
  }

  /** One of the generators, each as likely. */
  @SafeVarargs
  static <T> Gen<T> oneOf(Gen<? extends T>... gens) {
    return random -> gens[random.nextInt(gens.length)].next(random);
  }

  record Weighted<T>(int weight, Gen<? extends T> gen) {}

  static <T> Weighted<T> weight(int weight, Gen<? extends T> gen) {
    return new Weighted<>(weight, gen);
  }

  /** One of the generators, picked in proportion to its weight. */
  @SafeVarargs
  static <T> Gen<T> frequency(Weighted<? extends T>... choices) {
    int total = 0;
    for (Weighted<? extends T> c : choices) total += c.weight();
    int sum = total;
    return random -> {
      int pick = random.nextInt(sum);
      for (Weighted<? extends T> c : choices) {
        if ((pick -= c.weight()) < 0) return c.gen().next(random);
      }
      throw new AssertionError("unreachable");
    };
  }

  /** Strings of up to {@code maxLength} chars drawn from {@code chars}. */
  static Gen<String> strings(Gen<Character> chars, int minLength, int maxLength) {
    return chars.list(minLength, maxLength).map(cs -> {
      StringBuilder s = new StringBuilder(cs.size());
      cs.forEach(s::append);
      return s.toString();
    });
  }

  static Gen<String> strings(Gen<Character> chars, int maxLength) {
    return strings(chars, 0, maxLength);
  }

  static Gen<Character> charsIn(String chars) {
    return random -> chars.charAt(random.nextInt(chars.length()));
  }

  /** From {@code first} to {@code last}, both included; the whole range includes lone surrogates. */
  static Gen<Character> charRange(char first, char last) {
    return random -> (char) random.nextInt(first, last + 1);
  }

  String ALPHA = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
  String ALPHANUMERIC = ALPHA + "0123456789";
}
