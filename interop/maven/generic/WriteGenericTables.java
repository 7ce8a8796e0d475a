// Writes the v3 tables of testdata/java/ that Spark SQL cannot write, with
// Iceberg Java's own generic writers (GenericRecord, GenericParquetWriter,
// BaseDVFileWriter) in a HadoopCatalog under the warehouse directory given:
//
//   geo           geometry with srid:3857, geometry with a non-EPSG CRS
//                 (ESRI:102008), geography with the default CRS (OGC:CRS84):
//                 WKB points, lines, polygons and nulls; a delete by vector
//   timestamp-ns  timestamp_ns and timestamptz_ns with all nine digits and
//                 values before 1970; an update (a vector and the row again
//                 with its _row_id stored, as Spark's merge-on-read writes it)
//   defaults      columns added with initial-default and write-default after
//                 rows were written and one deleted by a vector, one of them
//                 a field of a struct; then the write-default changed and
//                 new rows, one deleted by a vector
//
// Beside each table it writes <name>.java.json: for every snapshot of main,
// the rows Java's generic reader reads (IcebergGenerics, with _row_id and
// _last_updated_sequence_number), which interop/generate_testdata.py turns
// into the expected events. Run by interop/generate_testdata.sh:
//   java -cp 'JARS/*' WriteGenericTables.java WAREHOUSE [TABLE...]
// Values in the .java.json: WKB as base64, timestamps with nine fraction
// digits (timestamptz_ns in UTC with a Z), structs as objects.
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import java.io.File;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.time.LocalDateTime;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.apache.hadoop.conf.Configuration;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.DeleteFile;
import org.apache.iceberg.FileFormat;
import org.apache.iceberg.MetadataColumns;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.RowDelta;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.IcebergGenerics;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.data.parquet.GenericParquetWriter;
import org.apache.iceberg.deletes.BaseDVFileWriter;
import org.apache.iceberg.expressions.Literal;
import org.apache.iceberg.hadoop.HadoopCatalog;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.io.DataWriter;
import org.apache.iceberg.io.OutputFile;
import org.apache.iceberg.parquet.Parquet;
import org.apache.iceberg.types.TypeUtil;
import org.apache.iceberg.types.Types;

public class WriteGenericTables {
  static HadoopCatalog catalog;
  static final Namespace NS = Namespace.of("interop");

  public static void main(String[] args) throws Exception {
    String warehouse = new File(args[0]).getAbsolutePath();
    new File(warehouse).mkdirs();
    catalog = new HadoopCatalog(new Configuration(), "file:" + warehouse);
    List<String> only = List.of(args).subList(1, args.length);
    if (only.isEmpty() || only.contains("geo")) geo(warehouse);
    if (only.isEmpty() || only.contains("timestamp-ns")) timestampNs(warehouse);
    if (only.isEmpty() || only.contains("defaults")) defaults(warehouse);
  }

  static Table create(String name, Schema schema) {
    TableIdentifier id = TableIdentifier.of(NS, name.replace('-', '_'));
    if (catalog.tableExists(id)) catalog.dropTable(id, true);
    return catalog.createTable(
        id, schema, PartitionSpec.unpartitioned(), Map.of("format-version", "3"));
  }

  // ---------------------------------------------------------------- writing

  /** Appends one Parquet data file of rows (in the given write schema). */
  static DataFile dataFile(Table t, Schema schema, List<Record> rows) throws Exception {
    OutputFile out =
        t.io().newOutputFile(t.locationProvider().newDataLocation(UUID.randomUUID() + ".parquet"));
    DataWriter<Record> w =
        Parquet.writeData(out)
            .schema(schema)
            .createWriterFunc(GenericParquetWriter::create)
            .withSpec(PartitionSpec.unpartitioned())
            .overwrite()
            .build();
    try (w) {
      for (Record r : rows) w.write(r);
    }
    return w.toDataFile();
  }

  static void append(Table t, List<Record> rows) throws Exception {
    t.newAppend().appendFile(dataFile(t, t.schema(), rows)).commit();
  }

  // The vector each data file has, with its positions: a later delete in the
  // same file writes one vector holding both and removes the old one, as
  // Java's own writers do (two vectors for one file fail validation).
  static final Map<String, DeleteFile> VECTORS = new HashMap<>();
  static final Map<String, List<Long>> DELETED = new HashMap<>();

  /** Adds to rd a deletion vector (Puffin) over the row l, replacing the file's earlier one. */
  static RowDelta deleteRow(Table t, RowDelta rd, Located l) throws Exception {
    String path = l.file().location();
    List<Long> positions = new ArrayList<>(DELETED.getOrDefault(path, List.of()));
    positions.add(l.pos());
    BaseDVFileWriter w =
        new BaseDVFileWriter(
            () -> t.io().newOutputFile(t.locationProvider().newDataLocation(UUID.randomUUID() + "-dv.puffin")),
            p -> null);
    try (w) {
      for (long p : positions) w.delete(path, p, PartitionSpec.unpartitioned(), null);
    }
    DeleteFile dv = w.result().deleteFiles().get(0);
    // Validated from the head: without it Java counts every earlier vector
    // of the file as added concurrently, the replaced one included.
    rd.validateFromSnapshot(t.currentSnapshot().snapshotId()).addDeletes(dv);
    DeleteFile old = VECTORS.put(path, dv);
    if (old != null) rd.removeDeletes(old);
    DELETED.put(path, positions);
    return rd;
  }

  /** The live data file holding a value of id, with its first_row_id and the row's position. */
  record Located(DataFile file, long pos) {}

  static Located locate(Table t, long id) throws Exception {
    Schema s = new Schema(t.schema().findField("id"), MetadataColumns.FILE_PATH, MetadataColumns.ROW_POSITION);
    String path = null;
    long pos = -1;
    try (CloseableIterable<Record> it = IcebergGenerics.read(t).project(s).build()) {
      for (Record r : it) {
        if (((Long) r.getField("id")) == id) {
          path = r.getField(MetadataColumns.FILE_PATH.name()).toString();
          pos = (Long) r.getField(MetadataColumns.ROW_POSITION.name());
        }
      }
    }
    for (var task : t.newScan().planFiles()) {
      if (task.file().location().equals(path)) return new Located(task.file(), pos);
    }
    throw new IllegalStateException("no live row with id " + id);
  }

  static long rowId(Located l) {
    return l.file().firstRowId() + l.pos();
  }

  /**
   * Updates the row with this id as Spark's merge-on-read UPDATE does: a vector
   * over the old row and the new row written with its _row_id (and a null
   * _last_updated_sequence_number, inherited from the entry), one commit.
   */
  static void update(Table t, long id, Object... kv) throws Exception {
    Located l = locate(t, id);
    Schema s = TypeUtil.join(t.schema(), new Schema(MetadataColumns.ROW_ID, MetadataColumns.LAST_UPDATED_SEQUENCE_NUMBER));
    Record old = null;
    try (CloseableIterable<Record> it = IcebergGenerics.read(t).build()) {
      for (Record r : it) if (((Long) r.getField("id")) == id) old = r.copy();
    }
    GenericRecord r = GenericRecord.create(s);
    for (Types.NestedField f : t.schema().columns()) r.setField(f.name(), old.getField(f.name()));
    for (int i = 0; i < kv.length; i += 2) r.setField((String) kv[i], kv[i + 1]);
    r.setField(MetadataColumns.ROW_ID.name(), rowId(l));
    deleteRow(t, t.newRowDelta(), l).addRows(dataFile(t, s, List.of(r))).commit();
  }

  // ---------------------------------------------------------------- WKB

  static ByteBuffer wkb(int type, double[][] rings, boolean polygon) {
    int n = 1 + 4;
    if (polygon) {
      n += 4;
      for (double[] r : rings) n += 4 + r.length * 8;
    } else {
      n += rings[0].length * 8 + (type == 1 ? 0 : 4);
    }
    ByteBuffer b = ByteBuffer.allocate(n).order(ByteOrder.LITTLE_ENDIAN);
    b.put((byte) 1).putInt(type);
    if (type == 1) {
      b.putDouble(rings[0][0]).putDouble(rings[0][1]);
    } else if (!polygon) {
      b.putInt(rings[0].length / 2);
      for (double d : rings[0]) b.putDouble(d);
    } else {
      b.putInt(rings.length);
      for (double[] r : rings) {
        b.putInt(r.length / 2);
        for (double d : r) b.putDouble(d);
      }
    }
    return b.flip();
  }

  static ByteBuffer point(double x, double y) {
    return wkb(1, new double[][] {{x, y}}, false);
  }

  static ByteBuffer line(double... xy) {
    return wkb(2, new double[][] {xy}, false);
  }

  static ByteBuffer polygon(double[]... rings) {
    return wkb(3, rings, true);
  }

  // ---------------------------------------------------------------- tables

  static Record rec(Schema s, Object... kv) {
    GenericRecord r = GenericRecord.create(s);
    for (int i = 0; i < kv.length; i += 2) r.setField((String) kv[i], kv[i + 1]);
    return r;
  }

  static void geo(String warehouse) throws Exception {
    Schema s =
        new Schema(
            Types.NestedField.required(1, "id", Types.LongType.get()),
            Types.NestedField.optional(2, "g", Types.GeometryType.of("srid:3857")),
            Types.NestedField.optional(3, "geog", Types.GeographyType.crs84()),
            Types.NestedField.optional(4, "other", Types.GeometryType.of("ESRI:102008")),
            Types.NestedField.optional(5, "note", Types.StringType.get()));
    Table t = create("geo", s);
    s = t.schema();
    append(
        t,
        List.of(
            rec(s, "id", 1L, "g", point(1.5, -2.25), "geog", point(13.4, 52.5), "other", point(0, 0), "note", "points"),
            rec(s, "id", 2L, "g", line(0, 0, 1, 1, 2, 0), "geog", line(-0.1, 51.5, 2.35, 48.85), "other", null, "note", "lines"),
            rec(s, "id", 3L, "g", polygon(new double[] {0, 0, 4, 0, 4, 4, 0, 4, 0, 0}, new double[] {1, 1, 2, 1, 2, 2, 1, 1}),
                "geog", polygon(new double[] {10, 10, 11, 10, 11, 11, 10, 10}), "other", line(5, 5, 6, 6), "note", "polygons"),
            rec(s, "id", 4L, "g", null, "geog", null, "other", null, "note", "nulls")));
    append(t, List.of(rec(s, "id", 5L, "g", point(-180, 90), "geog", point(-180, -90), "other", point(1e6, -1e6), "note", "extremes")));
    deleteRow(t, t.newRowDelta(), locate(t, 2)).commit();
    expected(warehouse, "geo", t);
  }

  static void timestampNs(String warehouse) throws Exception {
    Schema s =
        new Schema(
            Types.NestedField.required(1, "id", Types.LongType.get()),
            Types.NestedField.optional(2, "ts", Types.TimestampNanoType.withoutZone()),
            Types.NestedField.optional(3, "tstz", Types.TimestampNanoType.withZone()),
            Types.NestedField.optional(4, "note", Types.StringType.get()));
    Table t = create("timestamp-ns", s);
    s = t.schema();
    append(
        t,
        List.of(
            rec(s, "id", 1L, "ts", LocalDateTime.of(2024, 2, 29, 23, 59, 59, 123456789),
                "tstz", OffsetDateTime.of(2024, 2, 29, 23, 59, 59, 123456789, ZoneOffset.UTC), "note", "nine digits"),
            rec(s, "id", 2L, "ts", LocalDateTime.of(1969, 12, 31, 23, 59, 59, 999999999),
                "tstz", OffsetDateTime.of(1900, 1, 1, 0, 0, 0, 1, ZoneOffset.UTC), "note", "before 1970"),
            rec(s, "id", 3L, "ts", LocalDateTime.of(1970, 1, 1, 0, 0, 0, 1),
                "tstz", OffsetDateTime.of(2262, 4, 11, 23, 47, 16, 854775807, ZoneOffset.UTC), "note", "edges"),
            rec(s, "id", 4L, "ts", null, "tstz", null, "note", "nulls")));
    update(t, 2, "ts", LocalDateTime.of(1969, 7, 20, 20, 17, 40, 5),
        "tstz", OffsetDateTime.of(1969, 7, 20, 20, 17, 40, 500000001, ZoneOffset.UTC), "note", "updated");
    append(t, List.of(rec(s, "id", 5L, "ts", LocalDateTime.of(2000, 1, 1, 0, 0, 0, 10), "tstz",
        OffsetDateTime.of(2000, 1, 1, 0, 0, 0, 100, ZoneOffset.UTC), "note", "insert")));
    expected(warehouse, "timestamp-ns", t);
  }

  static void defaults(String warehouse) throws Exception {
    Schema s =
        new Schema(
            Types.NestedField.required(1, "id", Types.LongType.get()),
            Types.NestedField.optional(2, "name", Types.StringType.get()),
            Types.NestedField.optional(3, "s", Types.StructType.of(
                Types.NestedField.optional(4, "a", Types.IntegerType.get()))));
    Table t = create("defaults", s);
    s = t.schema();
    Schema inner = s.findField("s").type().asStructType().asSchema();
    append(t, List.of(rec(s, "id", 1L, "name", "a", "s", rec(inner, "a", 10)), rec(s, "id", 2L, "name", "b", "s", null),
        rec(s, "id", 3L, "name", "c", "s", rec(inner, "a", 30))));
    deleteRow(t, t.newRowDelta(), locate(t, 2)).commit();
    // Rows 1 and 3 were written before the columns existed: they read the
    // initial-default; row 2 was deleted before.
    t.updateSchema()
        .addColumn("d", Types.IntegerType.get(), "added with a default", Literal.of(42))
        .addColumn("s", "b", Types.StringType.get(), "a struct field added with a default", Literal.of("dflt"))
        .commit();
    // Only the write-default changes: old rows keep reading 42.
    t.updateSchema().updateColumnDefault("d", Literal.of(7)).commit();
    s = t.schema();
    inner = s.findField("s").type().asStructType().asSchema();
    append(t, List.of(rec(s, "id", 4L, "name", "d", "d", 7, "s", rec(inner, "a", 40, "b", "dflt")),
        rec(s, "id", 5L, "name", "e", "d", null, "s", rec(inner, "a", null, "b", null))));
    // Row 3 was written before d and s.b existed: its before image holds
    // their initial-defaults, its after image the values written.
    update(t, 3, "name", "C");
    deleteRow(t, t.newRowDelta(), locate(t, 4)).commit();
    expected(warehouse, "defaults", t);
  }

  // ---------------------------------------------------------------- expected rows

  static final DateTimeFormatter NANOS = DateTimeFormatter.ofPattern("uuuu-MM-dd'T'HH:mm:ss.SSSSSSSSS");

  static Object json(Object v) {
    if (v == null) return null;
    if (v instanceof ByteBuffer b) {
      byte[] a = new byte[b.remaining()];
      b.duplicate().get(a);
      return Base64.getEncoder().encodeToString(a); // WKB, base64 as the Spark tables' binary values
    }
    if (v instanceof Record r) {
      Map<String, Object> m = new LinkedHashMap<>();
      for (Types.NestedField f : r.struct().fields()) m.put(f.name(), json(r.getField(f.name())));
      return m;
    }
    // Always nine fraction digits (toString drops zero seconds and digits).
    if (v instanceof LocalDateTime d) return NANOS.format(d);
    if (v instanceof OffsetDateTime d) return NANOS.format(d.withOffsetSameInstant(ZoneOffset.UTC)) + "Z";
    return v;
  }

  static void expected(String warehouse, String name, Table t) throws Exception {
    t.refresh();
    List<Snapshot> snaps = new ArrayList<>();
    for (Snapshot s = t.currentSnapshot(); s != null; s = s.parentId() == null ? null : t.snapshot(s.parentId())) {
      snaps.add(0, s);
    }
    List<Object> out = new ArrayList<>();
    for (Snapshot snap : snaps) {
      Schema schema = t.schemas().get(snap.schemaId());
      Schema read = TypeUtil.join(schema, new Schema(MetadataColumns.ROW_ID, MetadataColumns.LAST_UPDATED_SEQUENCE_NUMBER));
      List<Object> rows = new ArrayList<>();
      try (CloseableIterable<Record> it = IcebergGenerics.read(t).useSnapshot(snap.snapshotId()).project(read).build()) {
        for (Record r : it) {
          Map<String, Object> m = new LinkedHashMap<>();
          for (Types.NestedField f : read.columns()) m.put(f.name(), json(r.getField(f.name())));
          rows.add(m);
        }
      }
      Map<String, Object> s = new LinkedHashMap<>();
      s.put("snapshot_id", snap.snapshotId());
      s.put("sequence_number", snap.sequenceNumber());
      s.put("operation", snap.operation());
      s.put("schema_id", snap.schemaId());
      s.put("rows", rows);
      out.add(s);
    }
    Map<String, Object> doc = new LinkedHashMap<>();
    doc.put("table", name);
    doc.put("written_by", "Iceberg Java " + org.apache.iceberg.IcebergBuild.version() + " generic writers");
    doc.put("metadata", ((org.apache.iceberg.HasTableOperations) t).operations().current().metadataFileLocation());
    doc.put("location", t.location());
    doc.put("snapshots", out);
    new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT).writeValue(new File(warehouse, name + ".java.json"), doc);
    System.out.println("table " + name + ": " + snaps.size() + " snapshots");
  }
}
