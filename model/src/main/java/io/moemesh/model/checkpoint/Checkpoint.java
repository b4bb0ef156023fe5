package io.moemesh.model.checkpoint;

import io.moemesh.kernels.DType;
import io.moemesh.kernels.Tensor;
import io.moemesh.kernels.TensorArena;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Stream;

/**
 * A model's weights: one {@code .safetensors} file, a directory sharded by {@value ShardIndex#FILE_NAME}, or a
 * directory of {@code *.safetensors} files without an index (scanned; a name in two files is an error). All files
 * are memory-mapped; {@link #load} copies a tensor into aligned off-heap memory, so nothing handed out refers to
 * the mapping. With an index, only the tensors it maps are visible.
 *
 * <p>Thread-safe: tensors may be loaded concurrently. {@link #close()} unmaps every file.
 */
public final class Checkpoint implements AutoCloseable {
  private final Path path;
  private final List<SafetensorsFile> files;
  private final Map<String, SafetensorsFile> nameToFile; // in storage order: file, then offset

  private Checkpoint(Path path, List<SafetensorsFile> files, Map<String, SafetensorsFile> nameToFile) {
    this.path = path;
    this.files = List.copyOf(files);
    this.nameToFile = Collections.unmodifiableMap(nameToFile);
  }

  /** Opens a checkpoint directory (or a single {@code .safetensors} file) and validates every header. */
  public static Checkpoint open(Path path) {
    if (Files.isRegularFile(path)) return scanned(path, List.of(path));
    if (!Files.isDirectory(path)) throw new CheckpointException(path + ": no such checkpoint file or directory");
    Path index = path.resolve(ShardIndex.FILE_NAME);
    if (Files.exists(index)) return sharded(path, ShardIndex.read(index));
    List<Path> found;
    try (Stream<Path> list = Files.list(path)) {
      found = list.filter(p -> p.getFileName().toString().endsWith(".safetensors") && Files.isRegularFile(p))
          .sorted().toList();
    } catch (IOException e) {
      throw new CheckpointException(path + ": cannot list: " + e, e);
    }
    if (found.isEmpty())
      throw new CheckpointException(path + ": no " + ShardIndex.FILE_NAME + " and no *.safetensors files");
    return scanned(path, found);
  }

  private static Checkpoint scanned(Path path, List<Path> paths) {
    List<SafetensorsFile> files = new ArrayList<>();
    try {
      Map<String, SafetensorsFile> nameToFile = new LinkedHashMap<>();
      for (Path p : paths) {
        SafetensorsFile file = SafetensorsFile.open(p);
        files.add(file);
        for (String name : file.names()) {
          SafetensorsFile other = nameToFile.putIfAbsent(name, file);
          if (other != null)
            throw new CheckpointException(path + ": tensor " + Json.quote(name) + " is in both " + other.path().getFileName()
                + " and " + p.getFileName());
        }
      }
      return new Checkpoint(path, files, nameToFile);
    } catch (RuntimeException e) {
      closeAll(files);
      throw e;
    }
  }

  private static Checkpoint sharded(Path dir, ShardIndex index) {
    Path indexFile = dir.resolve(ShardIndex.FILE_NAME);
    Path root = dir.toAbsolutePath().normalize();
    Set<String> shards = new TreeSet<>(index.weightMap().values());
    List<SafetensorsFile> files = new ArrayList<>();
    try {
      Map<String, SafetensorsFile> shardToFile = new LinkedHashMap<>();
      for (String shard : shards) {
        Path p;
        try {
          p = root.resolve(shard).normalize();
        } catch (InvalidPathException e) {
          throw new CheckpointException(indexFile + ": shard " + Json.quote(shard) + " is not a valid file name", e);
        }
        if (!p.startsWith(root) || p.equals(root))
          throw new CheckpointException(indexFile + ": shard " + Json.quote(shard) + " lies outside " + dir);
        if (!Files.isRegularFile(p))
          throw new CheckpointException(indexFile + ": shard " + Json.quote(shard) + " does not exist in " + dir);
        SafetensorsFile file = SafetensorsFile.open(p);
        files.add(file);
        shardToFile.put(shard, file);
      }
      for (Map.Entry<String, String> e : index.weightMap().entrySet()) {
        if (!shardToFile.get(e.getValue()).contains(e.getKey()))
          throw new CheckpointException(indexFile + ": tensor " + Json.quote(e.getKey()) + " is mapped to "
              + e.getValue() + ", which does not contain it");
      }
      Map<String, SafetensorsFile> nameToFile = new LinkedHashMap<>();
      for (Map.Entry<String, SafetensorsFile> shard : shardToFile.entrySet()) {
        for (String name : shard.getValue().names())
          if (shard.getKey().equals(index.weightMap().get(name))) nameToFile.put(name, shard.getValue());
      }
      return new Checkpoint(dir, files, nameToFile);
    } catch (RuntimeException e) {
      closeAll(files);
      throw e;
    }
  }

  /** The directory (or file) this checkpoint was opened from. */
  public Path path() { return path; }

  /** The files it maps, in storage order. */
  public List<Path> files() { return files.stream().map(SafetensorsFile::path).toList(); }

  public boolean contains(String name) { return nameToFile.containsKey(name); }

  /** Every tensor name, in storage order (file, then offset): the fastest order to load them in. */
  public Set<String> names() { return nameToFile.keySet(); }

  public TensorInfo info(String name) { return file(name).info(name); }

  /** The sum of every visible tensor's byte length, for progress reports. */
  public long totalBytes() {
    long sum = 0;
    for (Map.Entry<String, SafetensorsFile> e : nameToFile.entrySet()) sum += e.getValue().info(e.getKey()).byteLength();
    return sum;
  }

  /**
   * Copies tensor {@code name} into a new contiguous tensor of {@code arena}: BF16, F32, F8_E4M3, I8 and I32 keep
   * their dtype; F16 is widened to F32 (exactly); I64, U8 and BOOL cannot be loaded.
   */
  public Tensor load(String name, TensorArena arena) {
    SafetensorsFile file = file(name);
    TensorInfo info = file.info(name);
    DType dtype = switch (info.dtype()) {
      case BF16 -> DType.BF16;
      case F32, F16 -> DType.F32;
      case F8_E4M3 -> DType.F8_E4M3;
      case I8 -> DType.I8;
      case I32 -> DType.I32;
      case I64, U8, BOOL -> throw new CheckpointException(where(file, name) + " has dtype " + info.dtype()
          + ", which cannot be loaded into a tensor (supported: BF16, F16, F32, F8_E4M3, I8, I32)");
    };
    Tensor tensor = arena.allocate(dtype, loadableShape(file, info));
    readInto(name, tensor);
    return tensor;
  }

  /**
   * Reads tensor {@code name} into {@code dest}, a contiguous tensor of exactly its shape: byte for byte when
   * the dtypes agree, widened exactly when a BF16 or F16 tensor is read into F32; other pairs are an error.
   */
  public void readInto(String name, Tensor dest) {
    SafetensorsFile file = file(name);
    TensorInfo info = file.info(name);
    if (!info.hasShape(dest.shape()))
      throw new CheckpointException(where(file, name) + " has shape " + info.shapeString() + ", but the destination is " + dest);
    if (!dest.isContiguous()) throw new IllegalArgumentException("cannot read " + info + " into a non-contiguous " + dest);
    loadableShape(file, info);
    StDType source = info.dtype();
    if (source == StDType.of(dest.dtype())) TensorCopy.copy(file, name, dest);
    else if (dest.dtype() == DType.F32 && source == StDType.BF16) TensorCopy.widen(file, name, dest, TensorCopy.Widen.BF16);
    else if (dest.dtype() == DType.F32 && source == StDType.F16) TensorCopy.widen(file, name, dest, TensorCopy.Widen.F16);
    else throw new CheckpointException(where(file, name) + " is " + source + " and cannot be read into " + dest
        + " (same dtype, BF16→F32 or F16→F32 only)");
  }

  /**
   * Whether tensors {@code a} and {@code b} are byte-for-byte copies: the same dtype, shape and bytes (as DeepSeek-V3's
   * MTP layer stores its own copies of the embedding and the head it shares with the main model).
   */
  public boolean sameContents(String a, String b) {
    TensorInfo ia = info(a), ib = info(b);
    if (ia.dtype() != ib.dtype() || !java.util.Arrays.equals(ia.shape(), ib.shape())) return false;
    SafetensorsFile fa = file(a), fb = file(b);
    int block = 1 << 30; // a ByteBuffer holds < 2 GiB
    for (long from = 0; from < ia.byteLength(); from += block) {
      int length = (int) Math.min(block, ia.byteLength() - from);
      if (!fa.slice(a, from, length).equals(fb.slice(b, from, length))) return false;
    }
    return true;
  }

  /** Unmaps every file; idempotent. */
  @Override
  public void close() {
    closeAll(files);
  }

  @Override
  public String toString() {
    return "Checkpoint[" + path + ", " + files.size() + " files, " + nameToFile.size() + " tensors]";
  }

  private SafetensorsFile file(String name) {
    SafetensorsFile file = nameToFile.get(name);
    if (file == null) throw new CheckpointException(path + ": no tensor " + Json.quote(name));
    return file;
  }

  /** The shape as a {@link Tensor} takes it: each dimension an int, at most 2^31-1 elements. */
  private static int[] loadableShape(SafetensorsFile file, TensorInfo info) {
    long[] shape = info.shape();
    int[] out = new int[shape.length];
    long n = 1;
    for (int i = 0; i < shape.length; i++) {
      if (shape[i] > Integer.MAX_VALUE)
        throw new CheckpointException(where(file, info.name()) + " " + info.shapeString() + ": dimension " + i + " is too large to load");
      out[i] = (int) shape[i];
      n = Math.min(n * shape[i], 1L << 31); // saturates: both factors are at most 2^31
    }
    if (n > Integer.MAX_VALUE)
      throw new CheckpointException(where(file, info.name()) + " " + info.shapeString() + " has more than 2^31-1 elements");
    return out;
  }

  private static String where(SafetensorsFile file, String name) {
    return file.path() + ": tensor " + Json.quote(name);
  }

  private static void closeAll(List<SafetensorsFile> files) {
    for (SafetensorsFile f : files) f.close();
  }
}
