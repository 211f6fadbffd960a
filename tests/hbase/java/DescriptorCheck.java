// DescriptorCheck: checks our own protobuf definitions of HBase's wire messages against the descriptors
// compiled into the HBase client jar, field by field.
//
// Each message and enum of ours is matched with the jar's of the same name (its name within its
// package, e.g. "MutationProto.ColumnValue"), looked up in the outer classes named on the command
// line. For a message it checks the syntax of the two files, whether it is a map entry, and for
// each field (by number): its name, label, type, the name of its message or enum type, its default
// and its packed option. For an enum: the values, names, numbers and order (the first value is a
// proto2 field's default). A field of the jar's that ours lacks is a mismatch when it is required;
// an optional or repeated one is reported as "left out" (information only: our parser keeps it as
// an unknown field). Anything else that differs is a mismatch.
//
// Usage:
//   protoc --proto_path=DIR --include_imports --descriptor_set_out=ours.pb DIR/*.proto
//   java -cp .:hbase-shaded-client-VERSION.jar DescriptorCheck [--only=a.proto,b.proto] ours.pb OUTER...
// OUTER: an outer class of the jar's generated code, e.g. ClientProtos (taken as
// org.apache.hadoop.hbase.shaded.protobuf.generated.ClientProtos) or a fully qualified class name.
// --only: check the messages of these files of the set only (default: all but google/*).
// Exit status: 0 without mismatches, 1 with some, 2 when the arguments or the inputs are wrong.

import java.io.FileInputStream;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import org.apache.hbase.thirdparty.com.google.protobuf.DescriptorProtos.DescriptorProto;
import org.apache.hbase.thirdparty.com.google.protobuf.DescriptorProtos.EnumDescriptorProto;
import org.apache.hbase.thirdparty.com.google.protobuf.DescriptorProtos.EnumValueDescriptorProto;
import org.apache.hbase.thirdparty.com.google.protobuf.DescriptorProtos.FieldDescriptorProto;
import org.apache.hbase.thirdparty.com.google.protobuf.DescriptorProtos.FileDescriptorProto;
import org.apache.hbase.thirdparty.com.google.protobuf.DescriptorProtos.FileDescriptorSet;
import org.apache.hbase.thirdparty.com.google.protobuf.Descriptors.Descriptor;
import org.apache.hbase.thirdparty.com.google.protobuf.Descriptors.EnumDescriptor;
import org.apache.hbase.thirdparty.com.google.protobuf.Descriptors.FieldDescriptor;
import org.apache.hbase.thirdparty.com.google.protobuf.Descriptors.FileDescriptor;

public final class DescriptorCheck {
  private static final String GENERATED_PACKAGE = "org.apache.hadoop.hbase.shaded.protobuf.generated.";

  /** A message or enum of the jar's, with the file it is in. */
  private static final class JarType<T> {
    final T descriptor;
    final FileDescriptor file;

    JarType(T descriptor, FileDescriptor file) {
      this.descriptor = descriptor;
      this.file = file;
    }
  }

  // The jar's messages and enums by name within their package; more than one when two of the
  // outer classes define the same name.
  private final Map<String, List<JarType<Descriptor>>> jarMessages = new HashMap<>();
  private final Map<String, List<JarType<EnumDescriptor>>> jarEnums = new HashMap<>();
  // Every type of the descriptor set: ".full.name" -> its package.
  private final Map<String, String> ourPackages = new HashMap<>();

  private int mismatches, leftOut, messages, enums, fields;
  private int fileMismatches, fileLeftOut, fileMessages, fileEnums, fileFields;

  public static void main(String[] args) throws Exception {
    Set<String> only = null;
    List<String> rest = new ArrayList<>();
    for (String a : args) {
      if (a.startsWith("--only=")) only = new HashSet<>(Arrays.asList(a.substring(7).split(",")));
      else rest.add(a);
    }
    if (rest.size() < 2) {
      System.err.println("usage: DescriptorCheck [--only=a.proto,...] DESCRIPTOR_SET OUTER_CLASS...");
      System.exit(2);
    }
    FileDescriptorSet set;
    try (InputStream in = new FileInputStream(rest.get(0))) {
      set = FileDescriptorSet.parseFrom(in);
    }
    DescriptorCheck c = new DescriptorCheck();
    for (String outer : rest.subList(1, rest.size())) c.addOuterClass(outer);
    System.exit(c.run(set, only) == 0 ? 0 : 1);
  }

  private void addOuterClass(String name) throws Exception {
    Class<?> outer;
    try {
      outer = Class.forName(name.contains(".") ? name : GENERATED_PACKAGE + name);
    } catch (ClassNotFoundException e) {
      System.err.println("no class " + name + " on the class path");
      System.exit(2);
      return;
    }
    FileDescriptor file = (FileDescriptor) outer.getMethod("getDescriptor").invoke(null);
    for (Descriptor d : file.getMessageTypes()) indexJarMessage(d, file);
    for (EnumDescriptor e : file.getEnumTypes()) indexJarEnum(e, file);
  }

  private void indexJarMessage(Descriptor d, FileDescriptor file) {
    jarMessages.computeIfAbsent(relative(d.getFullName(), file.getPackage()), k -> new ArrayList<>())
        .add(new JarType<>(d, file));
    for (Descriptor n : d.getNestedTypes()) indexJarMessage(n, file);
    for (EnumDescriptor e : d.getEnumTypes()) indexJarEnum(e, file);
  }

  private void indexJarEnum(EnumDescriptor e, FileDescriptor file) {
    jarEnums.computeIfAbsent(relative(e.getFullName(), file.getPackage()), k -> new ArrayList<>())
        .add(new JarType<>(e, file));
  }

  private static String relative(String fullName, String pkg) {
    return !pkg.isEmpty() && fullName.startsWith(pkg + ".") ? fullName.substring(pkg.length() + 1) : fullName;
  }

  private int run(FileDescriptorSet set, Set<String> only) {
    for (FileDescriptorProto f : set.getFileList()) {
      String prefix = f.getPackage().isEmpty() ? "" : f.getPackage() + ".";
      for (DescriptorProto m : f.getMessageTypeList()) indexOurs(m, prefix, f.getPackage());
      for (EnumDescriptorProto e : f.getEnumTypeList()) ourPackages.put("." + prefix + e.getName(), f.getPackage());
    }
    for (FileDescriptorProto f : set.getFileList()) {
      if (only != null ? !only.contains(f.getName()) : f.getName().startsWith("google/")) continue;
      fileMismatches = fileLeftOut = fileMessages = fileEnums = fileFields = 0;
      System.out.println("== " + f.getName());
      String syntax = f.getSyntax().isEmpty() ? "proto2" : f.getSyntax();
      for (DescriptorProto m : f.getMessageTypeList()) checkMessage(m, "", syntax, f.getPackage());
      for (EnumDescriptorProto e : f.getEnumTypeList()) checkEnum(e, "");
      System.out.printf("%s: %d messages, %d enums, %d fields compared; %d mismatches, %d left out%n",
          f.getName(), fileMessages, fileEnums, fileFields, fileMismatches, fileLeftOut);
      mismatches += fileMismatches;
      leftOut += fileLeftOut;
      messages += fileMessages;
      enums += fileEnums;
      fields += fileFields;
    }
    System.out.printf("TOTAL: %d messages, %d enums, %d fields compared; %d mismatches, %d left out%n",
        messages, enums, fields, mismatches, leftOut);
    return mismatches;
  }

  private void indexOurs(DescriptorProto m, String prefix, String pkg) {
    String full = prefix + m.getName();
    ourPackages.put("." + full, pkg);
    for (DescriptorProto n : m.getNestedTypeList()) indexOurs(n, full + ".", pkg);
    for (EnumDescriptorProto e : m.getEnumTypeList()) ourPackages.put("." + full + "." + e.getName(), pkg);
  }

  private void mismatch(String what) {
    System.out.println("MISMATCH " + what);
    ++fileMismatches;
  }

  private static <T> JarType<T> pick(String kind, String name, List<JarType<T>> found) {
    if (found.size() > 1) {
      List<String> files = new ArrayList<>();
      for (JarType<T> t : found) files.add(t.file.getName());
      System.out.println("NOTE " + kind + " " + name + " is in " + files + " of the jar: compared with "
          + files.get(0) + "'s");
    }
    return found.get(0);
  }

  private void checkMessage(DescriptorProto ours, String outer, String syntax, String pkg) {
    String name = outer + ours.getName();
    ++fileMessages;
    for (DescriptorProto n : ours.getNestedTypeList()) checkMessage(n, name + ".", syntax, pkg);
    for (EnumDescriptorProto e : ours.getEnumTypeList()) checkEnum(e, name + ".");
    List<JarType<Descriptor>> found = jarMessages.get(name);
    if (found == null) {
      mismatch("message " + name + ": the jar's named files have no such message");
      return;
    }
    JarType<Descriptor> jar = pick("message", name, found);
    DescriptorProto theirs = jar.descriptor.toProto();
    String theirSyntax = jar.file.toProto().getSyntax().isEmpty() ? "proto2" : jar.file.toProto().getSyntax();
    if (!syntax.equals(theirSyntax)) mismatch("message " + name + ": " + syntax + " here, " + theirSyntax + " in the jar");
    if (ours.getOptions().getMapEntry() != theirs.getOptions().getMapEntry())
      mismatch("message " + name + ": map entry " + ours.getOptions().getMapEntry() + " here, "
          + theirs.getOptions().getMapEntry() + " in the jar");

    Map<Integer, FieldDescriptorProto> mine = new LinkedHashMap<>();
    for (FieldDescriptorProto f : ours.getFieldList()) mine.put(f.getNumber(), f);
    Map<Integer, FieldDescriptorProto> jars = new TreeMap<>();
    for (FieldDescriptorProto f : theirs.getFieldList()) jars.put(f.getNumber(), f);
    for (FieldDescriptorProto t : jars.values()) {
      FieldDescriptorProto o = mine.get(t.getNumber());
      String where = name + "." + t.getName() + " (" + t.getNumber() + ")";
      if (o == null) {
        String what = label(t) + " " + typeOfJars(jar.descriptor.findFieldByNumber(t.getNumber()));
        if (t.getLabel() == FieldDescriptorProto.Label.LABEL_REQUIRED) {
          mismatch(where + ": " + what + " in the jar, left out here (a required field cannot be)");
        } else {
          System.out.println("LEFT OUT " + where + ": " + what + " (kept as an unknown field)");
          ++fileLeftOut;
        }
        continue;
      }
      ++fileFields;
      compare(where, "name", t.getName(), o.getName());
      compare(where, "label", label(t), label(o));
      compare(where, "type", typeOfJars(jar.descriptor.findFieldByNumber(t.getNumber())), typeOfOurs(o, pkg));
      compare(where, "default", t.hasDefaultValue() ? t.getDefaultValue() : "(none)",
          o.hasDefaultValue() ? o.getDefaultValue() : "(none)");
      compare(where, "packed", t.getOptions().hasPacked() ? String.valueOf(t.getOptions().getPacked()) : "(unset)",
          o.getOptions().hasPacked() ? String.valueOf(o.getOptions().getPacked()) : "(unset)");
      compare(where, "oneof", oneof(theirs, t), oneof(ours, o));
    }
    for (FieldDescriptorProto o : mine.values()) {
      if (!jars.containsKey(o.getNumber()))
        mismatch(name + "." + o.getName() + " (" + o.getNumber() + "): here, not in the jar");
    }
  }

  private void compare(String where, String what, String jar, String ours) {
    if (!jar.equals(ours)) mismatch(where + ": " + what + " " + ours + " here, " + jar + " in the jar");
  }

  private static String label(FieldDescriptorProto f) {
    return f.getLabel().name().substring("LABEL_".length()).toLowerCase();
  }

  private static String oneof(DescriptorProto m, FieldDescriptorProto f) {
    return f.hasOneofIndex() ? m.getOneofDecl(f.getOneofIndex()).getName() : "(none)";
  }

  // A field's type: the scalar's name, or "message"/"enum" and the type's name, within its
  // package when that is the package of the field's own file, else in full.
  private static String typeOfJars(FieldDescriptor f) {
    String kind = f.getType().name().toLowerCase();
    String pkg = f.getFile().getPackage();
    switch (f.getType()) {
      case MESSAGE:
      case GROUP:
        return kind + " " + (f.getMessageType().getFile().getPackage().equals(pkg)
            ? relative(f.getMessageType().getFullName(), pkg) : f.getMessageType().getFullName());
      case ENUM:
        return kind + " " + (f.getEnumType().getFile().getPackage().equals(pkg)
            ? relative(f.getEnumType().getFullName(), pkg) : f.getEnumType().getFullName());
      default:
        return kind;
    }
  }

  private String typeOfOurs(FieldDescriptorProto f, String pkg) {
    String kind = f.getType().name().substring("TYPE_".length()).toLowerCase();
    if (f.getTypeName().isEmpty()) return kind;
    String full = f.getTypeName().substring(1);  // protoc writes ".package.Name"
    return kind + " " + (pkg.equals(ourPackages.get(f.getTypeName())) ? relative(full, pkg) : full);
  }

  private void checkEnum(EnumDescriptorProto ours, String outer) {
    String name = outer + ours.getName();
    ++fileEnums;
    List<JarType<EnumDescriptor>> found = jarEnums.get(name);
    if (found == null) {
      mismatch("enum " + name + ": the jar's named files have no such enum");
      return;
    }
    EnumDescriptorProto theirs = pick("enum", name, found).descriptor.toProto();
    List<String> mine = new ArrayList<>(), jars = new ArrayList<>();
    for (EnumValueDescriptorProto v : ours.getValueList()) mine.add(v.getName() + "=" + v.getNumber());
    for (EnumValueDescriptorProto v : theirs.getValueList()) jars.add(v.getName() + "=" + v.getNumber());
    if (!mine.equals(jars)) mismatch("enum " + name + ": values " + mine + " here, " + jars + " in the jar");
    if (ours.getOptions().getAllowAlias() != theirs.getOptions().getAllowAlias())
      mismatch("enum " + name + ": allow_alias " + ours.getOptions().getAllowAlias() + " here, "
          + theirs.getOptions().getAllowAlias() + " in the jar");
  }
}
