package io.moemesh.model;

import java.util.List;

/**
 * The tokens of one forward pass: rows of several sequences, each a contiguous run of positions (a prompt
 * chunk, one decode token, or several speculative tokens). The model never sees queues; the engine builds
 * this.
 *
 * @param tokens token id per row
 * @param positions position per row (consecutive within a sequence chunk)
 * @param sequences which rows belong to which sequence and where its KV pages are
 * @param logitRows rows whose logits are wanted, in output order
 */
public record ForwardBatch(int[] tokens, int[] positions, List<SequenceChunk> sequences, int[] logitRows) {

  /**
   * Rows {@code [firstRow, firstRow + numRows)} of one sequence.
   *
   * @param numPromptTokens positions below this are prompt tokens: they attend in the naive MLA form, the
   *     rest in the absorbed form, whatever else is in the batch (so a request's numbers never depend on
   *     its batch, chunking or preemption)
   * @param blockTable the sequence's KV page ids in position order, covering every position it attends
   */
  public record SequenceChunk(int firstRow, int numRows, int numPromptTokens, int[] blockTable) {}

  public ForwardBatch {
    if (tokens.length != positions.length)
      throw new IllegalArgumentException(tokens.length + " tokens but " + positions.length + " positions");
    int covered = 0;
    for (SequenceChunk s : sequences) {
      if (s.firstRow() != covered || s.numRows() < 1)
        throw new IllegalArgumentException("sequence chunks must tile the rows in order; got " + s.firstRow() + " at row " + covered);
      for (int r = s.firstRow() + 1; r < s.firstRow() + s.numRows(); r++)
        if (positions[r] != positions[r - 1] + 1) throw new IllegalArgumentException("positions of a chunk must be consecutive at row " + r);
      covered += s.numRows();
    }
    if (covered != tokens.length) throw new IllegalArgumentException("sequence chunks cover " + covered + " of " + tokens.length + " rows");
    for (int r : logitRows) if (r < 0 || r >= tokens.length) throw new IllegalArgumentException("logit row " + r + " out of range");
  }

  public int numRows() {
    return tokens.length;
  }

  /**
   * Rows {@code [fromRow, toRow)} as a batch of their own, rows renumbered from 0: whole sequence chunks only
   * (a chunk is never cut, so each sequence's attention is the same), with the logit rows that fall inside.
   */
  public ForwardBatch slice(int fromRow, int toRow) {
    if (fromRow < 0 || toRow > numRows() || fromRow >= toRow)
      throw new IllegalArgumentException("rows [" + fromRow + ", " + toRow + ") of a batch of " + numRows());
    List<SequenceChunk> inside = new java.util.ArrayList<>();
    for (SequenceChunk s : sequences) {
      int end = s.firstRow() + s.numRows();
      if (end <= fromRow || s.firstRow() >= toRow) continue;
      if (s.firstRow() < fromRow || end > toRow)
        throw new IllegalArgumentException("rows [" + fromRow + ", " + toRow + ") cut the sequence chunk of rows [" + s.firstRow() + ", " + end + ")");
      inside.add(new SequenceChunk(s.firstRow() - fromRow, s.numRows(), s.numPromptTokens(), s.blockTable()));
    }
    int[] logits = java.util.Arrays.stream(logitRows).filter(r -> r >= fromRow && r < toRow).map(r -> r - fromRow).toArray();
    return new ForwardBatch(java.util.Arrays.copyOfRange(tokens, fromRow, toRow), java.util.Arrays.copyOfRange(positions, fromRow, toRow),
        inside, logits);
  }

  /**
   * The given rows (ascending) as a batch of their own, renumbered from 0 in that order: each run of consecutive rows
   * of one sequence chunk stays one chunk, with its chunk's prompt length and pages; every row is a logit row.
   */
  public ForwardBatch rows(int[] rows) {
    int n = rows.length;
    int[] newTokens = new int[n], newPositions = new int[n];
    List<SequenceChunk> chunks = new java.util.ArrayList<>();
    int c = 0;
    for (int i = 0; i < n; i++) {
      int r = rows[i];
      if (r < 0 || r >= numRows() || (i > 0 && r <= rows[i - 1])) throw new IllegalArgumentException("rows must ascend within [0, " + numRows() + "): " + java.util.Arrays.toString(rows));
      while (sequences.get(c).firstRow() + sequences.get(c).numRows() <= r) c++;
      SequenceChunk s = sequences.get(c);
      newTokens[i] = tokens[r];
      newPositions[i] = positions[r];
      SequenceChunk last = chunks.isEmpty() ? null : chunks.getLast();
      if (last != null && rows[i - 1] == r - 1 && rows[i - 1] >= s.firstRow()) // the run goes on
        chunks.set(chunks.size() - 1, new SequenceChunk(last.firstRow(), last.numRows() + 1, last.numPromptTokens(), last.blockTable()));
      else chunks.add(new SequenceChunk(i, 1, s.numPromptTokens(), s.blockTable()));
    }
    return new ForwardBatch(newTokens, newPositions, chunks, java.util.stream.IntStream.range(0, n).toArray());
  }

  /**
   * Where to split this batch into two micro-batches: the boundary between sequence chunks nearest half the
   * rows (the lower one on a tie), so no sequence is cut; 0 when the batch is a single chunk.
   */
  public int microBatchSplit() {
    int best = 0;
    long bestDistance = Long.MAX_VALUE;
    for (SequenceChunk s : sequences) {
      int boundary = s.firstRow(); // the first chunk's is 0: not a split
      long distance = Math.abs(2L * boundary - numRows());
      if (boundary > 0 && distance < bestDistance) {
        best = boundary;
        bestDistance = distance;
      }
    }
    return best;
  }

  /** One sequence's chunk with logits for its last row: the common case. */
  public static ForwardBatch single(int[] tokens, int startPosition, int numPromptTokens, int[] blockTable, boolean allLogits) {
    int[] positions = new int[tokens.length];
    for (int i = 0; i < positions.length; i++) positions[i] = startPosition + i;
    int[] rows = allLogits ? java.util.stream.IntStream.range(0, tokens.length).toArray() : new int[] {tokens.length - 1};
    return new ForwardBatch(tokens, positions, List.of(new SequenceChunk(0, tokens.length, numPromptTokens, blockTable)), rows);
  }
}
