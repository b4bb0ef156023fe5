package io.moemesh.e2e;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * HTTP/1.1 over a plain socket, one request per connection ({@code Connection: close}): the fuzz test needs bytes that
 * {@link java.net.http.HttpClient} refuses to send (odd methods, any header, invalid UTF-8, a missing Content-Type) and
 * its own deadline on the whole answer.
 */
final class RawHttp {
  private RawHttp() {}

  /** One request. Header names and values are sent as ISO-8859-1 (any byte 0-255); Content-Length is added for a body. */
  record Request(String method, String target, List<Map.Entry<String, String>> headers, byte[] body, boolean maySucceed) {
    Request withHeader(String name, String value) {
      List<Map.Entry<String, String>> more = new ArrayList<>(headers);
      more.add(Map.entry(name, value));
      return new Request(method, target, more, body, maySucceed);
    }

    /** The bytes sent to {@code port}: what a failing case is written out as, to replay it exactly. */
    byte[] bytes(int port) {
      ByteArrayOutputStream out = new ByteArrayOutputStream();
      latin1(out, method + " " + target + " HTTP/1.1\r\nHost: 127.0.0.1:" + port + "\r\n");
      for (var h : headers) latin1(out, h.getKey() + ": " + h.getValue() + "\r\n");
      if (body != null) latin1(out, "Content-Length: " + body.length + "\r\n");
      latin1(out, "Connection: close\r\n\r\n");
      if (body != null) out.writeBytes(body);
      return out.toByteArray();
    }

    /** What a failing case prints: long parts cut, control and non-ASCII bytes escaped. */
    @Override
    public String toString() {
      StringBuilder s = new StringBuilder(method).append(' ').append(cut(target, 200));
      for (var h : headers) s.append("\n  ").append(cut(h.getKey(), 80)).append(": ").append(cut(h.getValue(), 200));
      if (body != null) {
        s.append("\n  body (").append(body.length).append(" bytes): ").append(cut(printable(body), 600));
      }
      return s.toString();
    }
  }

  /** An answer: the status, headers (lower-case names) and the de-chunked body. */
  record Answer(int status, Map<String, String> headers, byte[] body) {
    String header(String name) {
      return headers.get(name.toLowerCase(Locale.ROOT));
    }

    String text() {
      return new String(body, StandardCharsets.UTF_8);
    }

    @Override
    public String toString() {
      return status + " " + headers + " " + cut(printable(body), 400);
    }
  }

  /** No complete answer within the deadline: the gateway hung (or kept a closed request's connection open). */
  static final class NoAnswer extends IOException {
    NoAnswer(String message) {
      super(message);
    }
  }

  static Answer send(int port, Request request, Duration deadline) throws IOException {
    long end = System.nanoTime() + deadline.toNanos();
    try (Socket socket = new Socket()) {
      socket.connect(new InetSocketAddress("127.0.0.1", port), (int) deadline.toMillis());
      OutputStream out = socket.getOutputStream();
      try {
        out.write(request.bytes(port));
        out.flush();
      } catch (IOException closedEarly) {
        // a server may answer (413, 431) and close before it read everything: read what it said
      }
      return read(socket, end, request.method().equals("HEAD"));
    }
  }

  private static Answer read(Socket socket, long end, boolean head) throws IOException {
    InputStream in = socket.getInputStream();
    ByteArrayOutputStream got = new ByteArrayOutputStream();
    byte[] buffer = new byte[16384];
    while (true) {
      Answer answer = parse(got.toByteArray(), false, head);
      if (answer != null) return answer;
      long left = (end - System.nanoTime()) / 1_000_000;
      if (left <= 0) throw new NoAnswer("no complete answer in time; got " + got.size() + " bytes: " + cut(printable(got.toByteArray()), 300));
      socket.setSoTimeout((int) Math.max(1, left));
      int n;
      try {
        n = in.read(buffer);
      } catch (SocketTimeoutException timeout) {
        continue;
      } catch (IOException reset) {
        n = -1; // a reset after the answer: parse what came
      }
      if (n < 0) {
        Answer last = parse(got.toByteArray(), true, head);
        if (last == null) throw new IOException("the connection closed without a complete answer; got " + got.size()
            + " bytes: " + cut(printable(got.toByteArray()), 300));
        return last;
      }
      got.write(buffer, 0, n);
    }
  }

  /** The answer if {@code bytes} hold all of it (by Content-Length, chunking, or the connection's end), else null. */
  private static Answer parse(byte[] bytes, boolean closed, boolean head) throws IOException {
    int headEnd = indexOf(bytes, "\r\n\r\n".getBytes(StandardCharsets.ISO_8859_1), 0);
    if (headEnd < 0) return null;
    String[] lines = new String(bytes, 0, headEnd, StandardCharsets.ISO_8859_1).split("\r\n");
    String[] statusLine = lines[0].split(" ", 3);
    if (statusLine.length < 2 || !statusLine[0].startsWith("HTTP/")) throw new IOException("not an HTTP answer: " + lines[0]);
    int status = Integer.parseInt(statusLine[1]);
    Map<String, String> headers = new LinkedHashMap<>();
    for (int i = 1; i < lines.length; i++) {
      int colon = lines[i].indexOf(':');
      if (colon > 0) headers.put(lines[i].substring(0, colon).trim().toLowerCase(Locale.ROOT), lines[i].substring(colon + 1).trim());
    }
    int bodyStart = headEnd + 4;
    if (head || status == 204 || status == 304 || status / 100 == 1) return new Answer(status, headers, new byte[0]);
    String length = headers.get("content-length");
    if (length != null) {
      int n = Integer.parseInt(length);
      if (bytes.length - bodyStart < n) return null;
      return new Answer(status, headers, java.util.Arrays.copyOfRange(bytes, bodyStart, bodyStart + n));
    }
    if ("chunked".equalsIgnoreCase(headers.get("transfer-encoding"))) {
      ByteArrayOutputStream body = new ByteArrayOutputStream();
      int at = bodyStart;
      while (true) {
        int lineEnd = indexOf(bytes, "\r\n".getBytes(StandardCharsets.ISO_8859_1), at);
        if (lineEnd < 0) return null;
        int size = Integer.parseInt(new String(bytes, at, lineEnd - at, StandardCharsets.ISO_8859_1).split(";")[0].trim(), 16);
        at = lineEnd + 2;
        if (size == 0) return new Answer(status, headers, body.toByteArray());
        if (bytes.length < at + size + 2) return null;
        body.write(bytes, at, size);
        at += size + 2;
      }
    }
    return closed ? new Answer(status, headers, java.util.Arrays.copyOfRange(bytes, bodyStart, bytes.length)) : null;
  }

  private static int indexOf(byte[] bytes, byte[] what, int from) {
    outer:
    for (int i = from; i <= bytes.length - what.length; i++) {
      for (int j = 0; j < what.length; j++) if (bytes[i + j] != what[j]) continue outer;
      return i;
    }
    return -1;
  }

  private static void latin1(ByteArrayOutputStream out, String s) {
    out.writeBytes(s.getBytes(StandardCharsets.ISO_8859_1));
  }

  static String cut(String s, int max) {
    return s.length() <= max ? s : s.substring(0, max) + "…(" + s.length() + " chars)";
  }

  /** Printable ASCII as is, everything else as \xNN. */
  static String printable(byte[] bytes) {
    StringBuilder s = new StringBuilder();
    for (byte b : bytes) {
      int c = b & 0xff;
      if (c >= 0x20 && c < 0x7f) s.append((char) c);
      else s.append(String.format("\\x%02x", c));
      if (s.length() > 4000) break;
    }
    return s.toString();
  }

  static String printable(String s) {
    return printable(s.getBytes(StandardCharsets.ISO_8859_1));
  }
}
