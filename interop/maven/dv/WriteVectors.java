// Writes testdata/dv/ for the dv package's tests: deletion-vector-v1 blobs
// and Puffin files made by Iceberg Java's own writers (1.11, the jars of
// pom.xml beside this file), and vectors.json, which says what Java reads
// back from them. Run by interop/generate_dv_testdata.sh:
//
//   java -cp 'JARS/*' WriteVectors.java OUT_DIR
//
// Every expected value in vectors.json comes from Java reading the files it
// just wrote (PuffinReader for the footers, BitmapPositionDeleteIndex for the
// positions, RoaringBitmap for the container kinds, the DeleteFile that
// BaseDVFileWriter returns for what a manifest would record), so the Go tests
// compare against Java rather than against numbers typed by hand.

import com.fasterxml.jackson.core.JsonEncoding;
import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.util.DefaultPrettyPrinter;
import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.iceberg.DeleteFile;
import org.apache.iceberg.FileMetadata;
import org.apache.iceberg.FileFormat;
import org.apache.iceberg.IcebergBuild;
import org.apache.iceberg.MetadataColumns;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.deletes.BaseDVFileWriter;
import org.apache.iceberg.deletes.Deletes;
import org.apache.iceberg.deletes.PositionDeleteIndex;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.puffin.Blob;
import org.apache.iceberg.puffin.BlobMetadata;
import org.apache.iceberg.puffin.Puffin;
import org.apache.iceberg.puffin.PuffinCompressionCodec;
import org.apache.iceberg.puffin.PuffinReader;
import org.apache.iceberg.puffin.PuffinWriter;
import org.apache.iceberg.puffin.StandardBlobTypes;
import org.apache.iceberg.util.Pair;
import org.roaringbitmap.ArrayContainer;
import org.roaringbitmap.BitmapContainer;
import org.roaringbitmap.ContainerPointer;
import org.roaringbitmap.RoaringBitmap;
import org.roaringbitmap.RunContainer;

public class WriteVectors {
  static final long B = 1L << 32; // one 32-bit bucket of positions
  static final long C = 1L << 16; // one Roaring container

  // A set of positions, built the way a writer of deletes builds one.
  interface Positions {
    void addTo(PositionDeleteIndex index);
  }

  static Positions of(long... positions) {
    return index -> {
      for (long p : positions) {
        index.delete(p);
      }
    };
  }

  static Positions range(long from, long to) { // [from, to)
    return index -> index.delete(from, to);
  }

  static Positions every(long step, long from, long to) {
    return index -> {
      for (long p = from; p < to; p += step) {
        index.delete(p);
      }
    };
  }

  static Positions all(Positions... parts) {
    return index -> {
      for (Positions p : parts) {
        p.addTo(index);
      }
    };
  }

  static PositionDeleteIndex index(Positions positions) {
    PositionDeleteIndex index = Deletes.toPositionIndex(CloseableIterable.empty());
    positions.addTo(index);
    return index;
  }

  // The same positions as Iceberg's own test resources
  // (core/src/test/resources/org/apache/iceberg/deletes/), so that the Go
  // tests can check these bytes against those where both are present.
  static final Positions ALTERNATING = of(1, 3, 5, 7, 9);
  static final Positions SMALL_AND_LARGE =
      of(100, 101, Integer.MAX_VALUE + 100L, Integer.MAX_VALUE + 101L);
  static final Positions ICEBERG_ALL_CONTAINER_TYPES =
      all(
          of(5, 7),
          range(C + 1, C + 1000),
          range(2 * C + 1, 2 * C + 65535),
          of(B + 10, B + 20),
          range(B + C + 10, B + C + 500),
          range(B + 2 * C + 1, B + 2 * C + 65535));

  // Each kind of container in the low bucket and in one past 2^32: a few
  // positions (array), a range (run, once runOptimize has seen it) and
  // every third position of a container (bitmap: 21,846 one-position runs
  // would take more than its 8 KiB).
  static final Positions CONTAINER_KINDS =
      all(
          of(5, 7),
          range(C + 1, C + 1000),
          every(3, 2 * C, 3 * C),
          of(B + 10, B + 20),
          range(B + C + 10, B + C + 500),
          every(3, B + 3 * C + 1, B + 4 * C));

  // Buckets 1, 2, 5 and 9 and none below: Java writes every bucket up to
  // the highest, the empty ones (0, 3, 4, 6, 7, 8) included.
  static final Positions HIGH_KEYS =
      all(
          of(B + 1, 2 * B + C - 1, 2 * B + C, 5 * B + 0xFFFFFFFFL),
          range(9 * B, 9 * B + 100));

  // Two positions 40 buckets apart: 39 empty buckets between them, so the
  // blob is far larger than its two positions alone would need.
  static final Positions SPARSE_HIGH_KEY = of(3, 40 * B + 7);

  // One container holding positions on both sides of 2^31, in bucket 3.
  static final Positions HIGH_KEY_SIGN = of(3 * B + 0x7FFFFFFFL, 3 * B + 0x80000000L);

  public static void main(String[] args) throws IOException {
    if (args.length != 1) {
      System.err.println("usage: WriteVectors OUT_DIR");
      System.exit(2);
    }
    File out = new File(args[0]);
    if (!out.isDirectory() && !out.mkdirs()) {
      throw new IOException("cannot create " + out);
    }
    Map<String, Positions> vectors = new LinkedHashMap<>();
    vectors.put("empty.bin", of());
    vectors.put("one-container.bin", ALTERNATING);
    vectors.put("small-and-large.bin", SMALL_AND_LARGE);
    vectors.put("iceberg-all-container-types.bin", ICEBERG_ALL_CONTAINER_TYPES);
    vectors.put("container-kinds.bin", CONTAINER_KINDS);
    vectors.put("high-keys.bin", HIGH_KEYS);
    vectors.put("high-key-sign.bin", HIGH_KEY_SIGN);
    vectors.put("sparse-high-key.bin", SPARSE_HIGH_KEY);

    File manifest = new File(out, "vectors.json");
    try (JsonGenerator json =
        new JsonFactory().createGenerator(manifest, JsonEncoding.UTF8)) {
      json.setPrettyPrinter(new DefaultPrettyPrinter());
      json.writeStartObject();
      json.writeStringField("written_by", IcebergBuild.fullVersion());

      json.writeArrayFieldStart("vectors");
      for (Map.Entry<String, Positions> v : vectors.entrySet()) {
        PositionDeleteIndex index = index(v.getValue());
        ByteBuffer blob = index.serialize();
        byte[] bytes = new byte[blob.remaining()];
        blob.get(bytes);
        File file = new File(out, v.getKey());
        Files.write(file.toPath(), bytes);
        json.writeStartObject();
        json.writeStringField("file", v.getKey());
        json.writeNumberField("size", bytes.length);
        writeVector(json, bytes, deleteFile(file, DATA + v.getKey(), bytes.length, index));
        json.writeEndObject();
      }
      json.writeEndArray();

      json.writeArrayFieldStart("puffin");
      writeDVs(json, out, "dv-single.puffin", map("file-001.parquet", ALTERNATING));
      writeDVs(
          json,
          out,
          "dv-multi.puffin",
          map(
              "file-001.parquet", of(0, 100, 200),
              "file-002.parquet", of(50, 150),
              "file-003.parquet", ICEBERG_ALL_CONTAINER_TYPES,
              "file-004.parquet", HIGH_KEYS,
              "file-005.parquet", of(),
              "file-006.parquet", SPARSE_HIGH_KEY));
      writeEmptyPuffin(json, out, "empty.puffin");
      writeMixedPuffin(json, out, "mixed.puffin");
      json.writeEndArray();

      json.writeEndObject();
      json.writeRaw('\n');
    }
  }

  // Blob keeps its properties in their given order and Map.of's order
  // changes from run to run: the footer would.
  static Map<String, String> props(String... kv) {
    Map<String, String> m = new LinkedHashMap<>();
    for (int i = 0; i < kv.length; i += 2) {
      m.put(kv[i], kv[i + 1]);
    }
    return m;
  }

  static Map<String, Positions> map(Object... kv) {
    Map<String, Positions> m = new LinkedHashMap<>();
    for (int i = 0; i < kv.length; i += 2) {
      m.put(DATA + kv[i], (Positions) kv[i + 1]);
    }
    return m;
  }

  static final String DATA = "s3://warehouse/db/t/data/";

  // Deletion vectors the way a table's writer makes them: BaseDVFileWriter,
  // one blob per data file, all in one Puffin file.
  static void writeDVs(JsonGenerator json, File out, String name, Map<String, Positions> files)
      throws IOException {
    File file = new File(out, name);
    BaseDVFileWriter writer =
        new BaseDVFileWriter(
            () -> org.apache.iceberg.Files.localOutput(file), path -> null /* no previous */);
    try (BaseDVFileWriter w = writer) {
      for (Map.Entry<String, Positions> f : files.entrySet()) {
        w.delete(f.getKey(), index(f.getValue()), PartitionSpec.unpartitioned(), null);
      }
    }
    List<DeleteFile> dvs = new ArrayList<>(writer.result().deleteFiles());
    dvs.sort(Comparator.comparing(d -> d.referencedDataFile()));
    json.writeStartObject();
    json.writeStringField("file", name);
    json.writeNumberField("size", file.length());
    // What a manifest entry records for each vector: the Go reader gets
    // the blob's place and cardinality from there, not from the footer.
    json.writeArrayFieldStart("delete_files");
    for (DeleteFile dv : dvs) {
      json.writeStartObject();
      json.writeStringField("referenced_data_file", dv.referencedDataFile());
      json.writeStringField("format", dv.format().toString());
      json.writeNumberField("file_size_in_bytes", dv.fileSizeInBytes());
      json.writeNumberField("content_offset", dv.contentOffset());
      json.writeNumberField("content_size_in_bytes", dv.contentSizeInBytes());
      json.writeNumberField("record_count", dv.recordCount());
      json.writeEndObject();
    }
    json.writeEndArray();
    writeFooter(json, file, dvs);
    json.writeEndObject();
  }

  static void writeEmptyPuffin(JsonGenerator json, File out, String name) throws IOException {
    File file = new File(out, name);
    Puffin.write(org.apache.iceberg.Files.localOutput(file))
        .createdBy(IcebergBuild.fullVersion())
        .build()
        .close();
    json.writeStartObject();
    json.writeStringField("file", name);
    json.writeNumberField("size", file.length());
    writeFooter(json, file, List.of());
    json.writeEndObject();
  }

  // A statistics-style Puffin file: blobs of other types, one of them
  // zstd-compressed, around a deletion vector, so that a reader must find
  // the vector by the footer and must refuse to decode the others as one.
  static void writeMixedPuffin(JsonGenerator json, File out, String name) throws IOException {
    File file = new File(out, name);
    PositionDeleteIndex dv = index(of(2, 4, 6, 8, B + 1));
    String dataFile = DATA + "file-007.parquet";
    byte[] text =
        "not a deletion vector; the bytes of some other blob type\n"
            .repeat(4)
            .getBytes(StandardCharsets.UTF_8);
    try (PuffinWriter w =
        Puffin.write(org.apache.iceberg.Files.localOutput(file))
            .createdBy(IcebergBuild.fullVersion())
            .set("icecdc-test", "mixed")
            .build()) {
      w.write(
          new Blob(
              "icecdc-test-other-v1",
              List.of(1),
              7,
              3,
              ByteBuffer.wrap(text),
              null,
              props("kind", "uncompressed")));
      // Field, snapshot and sequence number as BaseDVFileWriter writes them.
      w.write(
          new Blob(
              StandardBlobTypes.DV_V1,
              List.of(MetadataColumns.ROW_POSITION.fieldId()),
              -1,
              -1,
              dv.serialize(),
              null,
              props(
                  "referenced-data-file",
                  dataFile,
                  "cardinality",
                  String.valueOf(dv.cardinality()))));
      w.write(
          new Blob(
              "icecdc-test-other-v1",
              List.of(1, 2),
              7,
              3,
              ByteBuffer.wrap(text),
              PuffinCompressionCodec.ZSTD,
              props("kind", "zstd")));
    }
    json.writeStartObject();
    json.writeStringField("file", name);
    json.writeNumberField("size", file.length());
    // Where the vector is, found as a reader of a manifest would be told.
    long offset = -1;
    long length = -1;
    try (PuffinReader reader = Puffin.read(org.apache.iceberg.Files.localInput(file)).build()) {
      for (BlobMetadata b : reader.fileMetadata().blobs()) {
        if (StandardBlobTypes.DV_V1.equals(b.type())) {
          offset = b.offset();
          length = b.length();
        }
      }
    }
    writeFooter(
        json, file, List.of(deleteFile(file, dataFile, offset, length, dv.cardinality())));
    json.writeEndObject();
  }

  // A DeleteFile as a manifest would describe a vector; Java's reader checks
  // the blob's size and cardinality against it.
  static DeleteFile deleteFile(File file, String dataFile, long length, PositionDeleteIndex index) {
    return deleteFile(file, dataFile, 0, length, index.cardinality());
  }

  static DeleteFile deleteFile(
      File file, String dataFile, long offset, long length, long cardinality) {
    return FileMetadata.deleteFileBuilder(PartitionSpec.unpartitioned())
        .ofPositionDeletes()
        .withFormat(FileFormat.PUFFIN)
        .withPath(file.getPath())
        .withFileSizeInBytes(file.length())
        .withReferencedDataFile(dataFile)
        .withContentOffset(offset)
        .withContentSizeInBytes(length)
        .withRecordCount(cardinality)
        .build();
  }

  // The footer as Java's PuffinReader reads it, and for each blob its
  // (decompressed) data read back: a deletion vector's positions and
  // containers, any other blob's bytes as text.
  static void writeFooter(JsonGenerator json, File file, List<DeleteFile> dvs)
      throws IOException {
    try (PuffinReader reader = Puffin.read(org.apache.iceberg.Files.localInput(file)).build()) {
      Map<String, DeleteFile> byDataFile = new TreeMap<>();
      for (DeleteFile d : dvs) {
        byDataFile.put(d.referencedDataFile(), d);
      }
      org.apache.iceberg.puffin.FileMetadata meta = reader.fileMetadata();
      writeProperties(json, meta.properties());
      json.writeArrayFieldStart("blobs");
      for (Pair<BlobMetadata, ByteBuffer> p : reader.readAll(meta.blobs())) {
        BlobMetadata b = p.first();
        json.writeStartObject();
        json.writeStringField("type", b.type());
        json.writeArrayFieldStart("fields");
        for (int f : b.inputFields()) {
          json.writeNumber(f);
        }
        json.writeEndArray();
        json.writeNumberField("snapshot_id", b.snapshotId());
        json.writeNumberField("sequence_number", b.sequenceNumber());
        json.writeNumberField("offset", b.offset());
        json.writeNumberField("length", b.length());
        json.writeStringField("compression_codec", b.compressionCodec());
        writeProperties(json, b.properties());
        ByteBuffer data = p.second();
        byte[] bytes = new byte[data.remaining()];
        data.get(bytes);
        if (StandardBlobTypes.DV_V1.equals(b.type())) {
          DeleteFile dv = byDataFile.get(b.properties().get("referenced-data-file"));
          if (dv == null || dv.contentOffset() != b.offset() || dv.contentSizeInBytes() != b.length()) {
            throw new IllegalStateException(file + ": blob at " + b.offset() + " is not the DeleteFile's");
          }
          writeVector(json, bytes, dv);
        } else {
          json.writeStringField("data", new String(bytes, StandardCharsets.UTF_8));
        }
        json.writeEndObject();
      }
      json.writeEndArray();
    }
  }

  static void writeProperties(JsonGenerator json, Map<String, String> props) throws IOException {
    json.writeObjectFieldStart("properties");
    for (Map.Entry<String, String> e : new TreeMap<>(props).entrySet()) {
      json.writeStringField(e.getKey(), e.getValue());
    }
    json.writeEndObject();
  }

  // A vector as Java reads it: its cardinality, its positions as
  // arithmetic progressions [from, to, step] (from, from+step, ... below
  // to; a range of 65,535 positions or every third position of a container
  // is one triple, not thousands of numbers), and the buckets and
  // containers of its bitmap.
  static void writeVector(JsonGenerator json, byte[] blob, DeleteFile dv) throws IOException {
    PositionDeleteIndex index = PositionDeleteIndex.deserialize(blob, dv);
    json.writeNumberField("cardinality", index.cardinality());
    List<long[]> ranges = new ArrayList<>(); // consecutive positions, [from, to)
    index.forEach(
        pos -> {
          long[] last = ranges.isEmpty() ? null : ranges.get(ranges.size() - 1);
          if (last != null && last[1] == pos) {
            last[1] = pos + 1;
          } else {
            ranges.add(new long[] {pos, pos + 1});
          }
        });
    json.writeArrayFieldStart("positions");
    for (int i = 0; i < ranges.size(); ) {
      // three or more single positions an equal step apart: one stride
      int j = i;
      long step = 0;
      while (j + 1 < ranges.size()
          && single(ranges.get(j))
          && single(ranges.get(j + 1))
          && (j == i || ranges.get(j + 1)[0] - ranges.get(j)[0] == step)) {
        step = ranges.get(j + 1)[0] - ranges.get(j)[0];
        j++;
      }
      if (j - i >= 2) {
        writeRun(json, ranges.get(i)[0], ranges.get(j)[0] + 1, step);
        i = j + 1;
      } else {
        writeRun(json, ranges.get(i)[0], ranges.get(i)[1], 1);
        i++;
      }
    }
    json.writeEndArray();
    writeContainers(json, blob);
  }

  static boolean single(long[] range) {
    return range[1] - range[0] == 1;
  }

  static void writeRun(JsonGenerator json, long from, long to, long step) throws IOException {
    json.writeStartArray();
    json.writeNumber(from);
    json.writeNumber(to);
    json.writeNumber(step);
    json.writeEndArray();
  }

  // Walks the portable 64-bit layout after the length and magic: the
  // bucket count, then per bucket its key and a 32-bit Roaring bitmap,
  // which RoaringBitmap itself deserializes, so its container classes are
  // the kinds the bytes hold.
  static void writeContainers(JsonGenerator json, byte[] blob) throws IOException {
    ByteBuffer buf = ByteBuffer.wrap(blob, 8, blob.length - 12).slice();
    buf.order(ByteOrder.LITTLE_ENDIAN);
    long count = buf.getLong();
    json.writeArrayFieldStart("buckets");
    for (long i = 0; i < count; i++) {
      int key = buf.getInt();
      RoaringBitmap bitmap = new RoaringBitmap();
      try {
        bitmap.deserialize(buf);
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
      buf.position(buf.position() + bitmap.serializedSizeInBytes());
      int array = 0;
      int bitset = 0;
      int run = 0;
      for (ContainerPointer c = bitmap.getContainerPointer(); c.getContainer() != null; c.advance()) {
        if (c.getContainer() instanceof ArrayContainer) {
          array++;
        } else if (c.getContainer() instanceof BitmapContainer) {
          bitset++;
        } else if (c.getContainer() instanceof RunContainer) {
          run++;
        }
      }
      json.writeStartObject();
      json.writeNumberField("key", Integer.toUnsignedLong(key));
      json.writeNumberField("cardinality", bitmap.getLongCardinality());
      json.writeNumberField("array", array);
      json.writeNumberField("bitmap", bitset);
      json.writeNumberField("run", run);
      json.writeEndObject();
    }
    json.writeEndArray();
    if (buf.hasRemaining()) {
      throw new IllegalStateException(buf.remaining() + " bytes after the last bucket");
    }
  }
}
