package io.moemesh.model;

import java.util.Arrays;
import java.util.stream.Collectors;

/** How the MoE gate picks each token's experts ({@code topk_method} in {@code config.json}). */
public enum TopkMethod {
  /** DeepSeek-V3: sigmoid scores; selection on scores + {@code e_score_correction_bias}, best groups first. */
  NOAUX_TC("noaux_tc"),
  /** The best {@code topk_group} of {@code n_group} groups, then the top k within them (DeepSeek-V2). */
  GROUP_LIMITED_GREEDY("group_limited_greedy"),
  /** The top k of all experts: one group. */
  GREEDY("greedy");

  private final String configName;

  TopkMethod(String configName) {
    this.configName = configName;
  }

  /** The name {@code config.json} uses. */
  public String configName() {
    return configName;
  }

  /** The method {@code config.json} names {@code name}; unknown names are refused, naming the known ones. */
  public static TopkMethod of(String name) {
    for (TopkMethod m : values()) if (m.configName.equals(name)) return m;
    throw new IllegalArgumentException("'" + name + "' is not one of "
        + Arrays.stream(values()).map(TopkMethod::configName).collect(Collectors.joining(", ")));
  }
}
