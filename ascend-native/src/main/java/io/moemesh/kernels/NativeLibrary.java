package io.moemesh.kernels;

import java.io.IOException;
import java.io.InputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.net.URISyntaxException;
import java.net.URL;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Locale;

/**
 * Finds and loads {@code libmoemesh_kernels.so}: the path in the system property
 * {@code moemesh.kernels.library} if set, else the copy the build put on the class path under
 * {@code native/linux-<arch>/} (extracted to a temporary file when it sits inside a jar).
 */
final class NativeLibrary {
  static final String PROPERTY = "moemesh.kernels.library";
  private static final String FILE = "libmoemesh_kernels.so";

  private final SymbolLookup symbols;

  private NativeLibrary(SymbolLookup symbols) {
    this.symbols = symbols;
  }

  /** Loads the library, or throws {@link UnsatisfiedLinkError} saying what was looked for. */
  static NativeLibrary load() {
    Path path = locate();
    return new NativeLibrary(SymbolLookup.libraryLookup(path, Arena.global()));
  }

  MethodHandle function(String name, FunctionDescriptor descriptor) {
    var symbol = symbols.find(name).orElseThrow(() -> new UnsatisfiedLinkError("symbol " + name + " missing from " + FILE));
    return Linker.nativeLinker().downcallHandle(symbol, descriptor);
  }

  private static Path locate() {
    String override = System.getProperty(PROPERTY);
    if (override != null) {
      Path path = Path.of(override);
      if (!Files.isReadable(path)) throw new UnsatisfiedLinkError(PROPERTY + "=" + override + " is not a readable file");
      return path;
    }
    String os = System.getProperty("os.name").toLowerCase(Locale.ROOT);
    String arch = switch (System.getProperty("os.arch")) {
      case "amd64", "x86_64" -> "x86_64";
      case "aarch64", "arm64" -> "aarch64";
      default -> System.getProperty("os.arch");
    };
    String resource = "native/" + (os.contains("linux") ? "linux" : os.replace(' ', '_')) + "-" + arch + "/" + FILE;
    URL url = NativeLibrary.class.getClassLoader().getResource(resource);
    if (url == null) throw new UnsatisfiedLinkError(resource + " is not on the class path (was the C build skipped?)");
    try {
      if (url.getProtocol().equals("file")) return Path.of(url.toURI());
      Path temp = Files.createTempFile("moemesh-kernels-", ".so");
      temp.toFile().deleteOnExit();
      try (InputStream in = url.openStream()) {
        Files.copy(in, temp, StandardCopyOption.REPLACE_EXISTING);
      }
      return temp;
    } catch (IOException | URISyntaxException e) {
      throw new UnsatisfiedLinkError("cannot extract " + resource + ": " + e.getMessage());
    }
  }
}
