package io.moemesh.kernels;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/** What Linux says of a mapping's huge-page advice, for the arenas' tests. */
final class HugePageMappings {
  private HugePageMappings() {}

  /** Whether transparent huge pages are on here (always, or on request). */
  static boolean available() throws IOException {
    Path thp = Path.of("/sys/kernel/mm/transparent_hugepage/enabled");
    return Files.isReadable(thp) && !Files.readString(thp).contains("[never]");
  }

  /** The VmFlags of the mapping holding {@code address}, from /proc/self/smaps ("hg": advised MADV_HUGEPAGE). */
  static List<String> vmFlags(long address) throws IOException {
    boolean inside = false;
    for (String line : Files.readAllLines(Path.of("/proc/self/smaps"))) {
      String[] range = line.split(" ", 2)[0].split("-");
      if (range.length == 2 && range[0].matches("[0-9a-f]+") && range[1].matches("[0-9a-f]+"))
        inside = Long.compareUnsigned(Long.parseUnsignedLong(range[0], 16), address) <= 0
            && Long.compareUnsigned(address, Long.parseUnsignedLong(range[1], 16)) < 0;
      else if (inside && line.startsWith("VmFlags:")) return List.of(line.substring("VmFlags:".length()).trim().split(" "));
    }
    throw new AssertionError("no mapping holds 0x" + Long.toHexString(address));
  }
}
