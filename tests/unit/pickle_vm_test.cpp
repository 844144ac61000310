// The restricted pickle machine on hand-assembled opcodes: what torch.save writes is read as
// inert values; any other global, call or opcode is refused with the source in the message.
#include "tensors/pickle_vm.hpp"

#include <gtest/gtest.h>

#include "core/error.hpp"

namespace vitattn::tensors::pickle {
namespace {

// A tiny assembler for the protocol-2 opcodes, so each test reads like pickletools.dis output.
struct Code {
  std::vector<std::uint8_t> b;
  Code() { op({0x80, 2}); }  // PROTO 2
  Code& op(std::initializer_list<int> bytes) {
    for (int x : bytes) b.push_back(static_cast<std::uint8_t>(x));
    return *this;
  }
  Code& str(const std::string& s) {  // BINUNICODE
    op({'X'});
    for (int i = 0; i < 4; ++i) b.push_back(static_cast<std::uint8_t>(s.size() >> (8 * i)));
    b.insert(b.end(), s.begin(), s.end());
    return *this;
  }
  Code& global(const std::string& module, const std::string& name) {
    op({'c'});
    for (const std::string& part : {module, name}) {
      b.insert(b.end(), part.begin(), part.end());
      b.push_back('\n');
    }
    return *this;
  }
  Code& int1(int v) { return op({'K', v}); }
  // _rebuild_tensor_v2(('storage', torch.<type>, key, 'cpu', numel), offset, sizes, strides, False, OrderedDict())
  Code& tensor(const std::string& type, const std::string& key, int numel, int offset, std::vector<int> sizes,
               std::vector<int> strides) {
    global("torch._utils", "_rebuild_tensor_v2").op({'(', '('}).str("storage").global("torch", type).str(key).str("cpu");
    int1(numel).op({'t', 'Q'});
    int1(offset);
    for (const auto* dims : {&sizes, &strides}) {
      op({'('});
      for (int d : *dims) int1(d);
      op({'t'});
    }
    op({0x89}).global("collections", "OrderedDict").op({')', 'R', 't', 'R'});
    return *this;
  }
  std::span<const std::uint8_t> span() const { return b; }
};

std::string error_of(const Code& c) {
  try {
    unpickle(c.span(), "ckpt.pth: data.pkl");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(PickleVm, ReadsAStateDictOfTensorsAsInertDescriptions) {
  Code c;
  c.op({'}', 'q', 0, '('}).str("w").tensor("FloatStorage", "0", 6, 1, {2, 2}, {1, 2});
  c.str("b").tensor("HalfStorage", "1", 3, 0, {3}, {1}).op({'u', '.'});
  const Unpickled u = unpickle(c.span(), "x");
  const Value& root = u.at(u.root);
  ASSERT_EQ(root.kind, Kind::dict);
  const Value* w = u.lookup(root, "w");
  ASSERT_TRUE(w && w->kind == Kind::tensor);
  EXPECT_EQ(w->offset, 1u);
  EXPECT_EQ(w->sizes, (std::vector<std::uint64_t>{2, 2}));
  EXPECT_EQ(w->strides, (std::vector<std::uint64_t>{1, 2}));
  const Value& ws = u.at(w->items[0]);
  EXPECT_EQ(ws.kind, Kind::storage);
  EXPECT_EQ(ws.dtype, DType::F32);
  EXPECT_EQ(ws.text, "0");
  EXPECT_EQ(ws.numel, 6u);
  const Value* b = u.lookup(root, "b");
  ASSERT_TRUE(b && b->kind == Kind::tensor);
  EXPECT_EQ(u.at(b->items[0]).dtype, DType::F16);
  EXPECT_EQ(u.lookup(root, "missing"), nullptr);
}

TEST(PickleVm, NumbersStringsAndConstants) {
  Code c;
  c.op({'(', 'J', 0xfe, 0xff, 0xff, 0xff, 'K', 200, 'M', 0x34, 0x12, 0x8a, 2, 0x00, 0x80, 0x8a, 0});
  c.op({'G', 0x3f, 0xf8, 0, 0, 0, 0, 0, 0, 'N', 0x88, 0x89}).str("é").op({'t', '.'});
  const Unpickled u = unpickle(c.span(), "x");
  const Value& t = u.at(u.root);
  ASSERT_EQ(t.kind, Kind::tuple);
  ASSERT_EQ(t.items.size(), 10u);
  EXPECT_EQ(u.at(t.items[0]).integer, -2);       // BININT is signed
  EXPECT_EQ(u.at(t.items[1]).integer, 200);      // BININT1 is not
  EXPECT_EQ(u.at(t.items[2]).integer, 0x1234);
  EXPECT_EQ(u.at(t.items[3]).integer, -32768);   // LONG1 0x8000: two's complement
  EXPECT_EQ(u.at(t.items[4]).integer, 0);        // LONG1 of no bytes
  EXPECT_EQ(u.at(t.items[5]).real, 1.5);         // BINFLOAT is big-endian
  EXPECT_EQ(u.at(t.items[6]).kind, Kind::none);
  EXPECT_TRUE(u.at(t.items[7]).boolean);
  EXPECT_FALSE(u.at(t.items[8]).boolean);
  EXPECT_EQ(u.at(t.items[9]).text, "é");          // BINUNICODE: UTF-8 bytes as they are
}

TEST(PickleVm, MemoSharesOneValue) {
  // [] PUT 0, 7, APPEND, GET 0, TUPLE2: both tuple items are the one list, holding 7.
  Code c;
  c.op({']', 'q', 0, 'K', 7, 'a', 'h', 0, 0x86, '.'});
  const Unpickled u = unpickle(c.span(), "x");
  const Value& t = u.at(u.root);
  ASSERT_EQ(t.items.size(), 2u);
  EXPECT_EQ(t.items[0], t.items[1]);
  EXPECT_EQ(u.at(t.items[0]).items.size(), 1u);
}

TEST(PickleVm, NamespaceIsReadAsData) {
  Code c;
  c.op({'}', '('}).str("args").global("argparse", "Namespace").op({')', 0x81, '}', '('});
  c.str("arch").str("vit_small").str("patch_size").int1(16).op({'u', 'b', 'u', '.'});
  const Unpickled u = unpickle(c.span(), "x");
  const Value* args = u.lookup(u.at(u.root), "args");
  ASSERT_TRUE(args && args->kind == Kind::namespace_);
  EXPECT_EQ(u.lookup(*args, "arch")->text, "vit_small");
  EXPECT_EQ(u.lookup(*args, "patch_size")->integer, 16);

  Code twice;  // a namespace is built once
  twice.global("argparse", "Namespace").op({')', 0x81, '}', 'q', 0, '(', 'N', 'N', 'u', 'b', 'h', 0, 'b', '.'});
  EXPECT_NE(error_of(twice).find("BUILD"), std::string::npos) << error_of(twice);
}

TEST(PickleVm, OrderedDictStateFromBuildIsIgnored) {
  // A state_dict's OrderedDict carries _metadata through BUILD.
  Code c;
  c.global("collections", "OrderedDict").op({')', 'R', '}', '('}).str("_metadata").op({'}', 'u', 'b', '.'});
  const Unpickled u = unpickle(c.span(), "x");
  EXPECT_EQ(u.at(u.root).kind, Kind::dict);
  EXPECT_TRUE(u.at(u.root).items.empty());
}

TEST(PickleVm, RefusesGlobalsOutsideTheList) {
  for (const auto& [module, name] : std::vector<std::pair<std::string, std::string>>{
           {"os", "system"}, {"builtins", "eval"}, {"posix", "system"}, {"torch", "ComplexFloatStorage"},
           {"torch._utils", "_rebuild_parameter"}, {"collections", "defaultdict"}, {"numpy.core.multiarray", "scalar"}}) {
    Code c;
    c.global(module, name).op({'('}).str("echo hi").op({'t', 'R', '.'});
    const std::string e = error_of(c);
    EXPECT_NE(e.find("ckpt.pth: data.pkl: "), std::string::npos) << e;
    EXPECT_NE(e.find("refers to " + module + "." + name), std::string::npos) << e;  // refused at GLOBAL
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  }
  // Not even as data: a global that is never called is refused all the same.
  Code as_data;
  as_data.op({'}', '('}).str("f").global("os", "system").op({'u', '.'});
  EXPECT_NE(error_of(as_data).find("refers to os.system"), std::string::npos) << error_of(as_data);
}

TEST(PickleVm, RefusesCallsOfAcceptedGlobalsOtherThanTheirOwn) {
  Code storage_call;  // torch.FloatStorage(…) would allocate: only a persistent id may name it
  storage_call.global("torch", "FloatStorage").op({'(', 'K', 5, 't', 'R', '.'});
  EXPECT_NE(error_of(storage_call).find("REDUCE of torch.FloatStorage"), std::string::npos);
  Code od_args;
  od_args.global("collections", "OrderedDict").op({'(', ']', 't', 'R', '.'});
  EXPECT_NE(error_of(od_args).find("REDUCE of collections.OrderedDict"), std::string::npos);
  Code ns_reduce;
  ns_reduce.global("argparse", "Namespace").op({')', 'R', '.'});
  EXPECT_NE(error_of(ns_reduce), "");
  Code od_newobj;
  od_newobj.global("collections", "OrderedDict").op({')', 0x81, '.'});
  EXPECT_NE(error_of(od_newobj).find("NEWOBJ of collections.OrderedDict"), std::string::npos);
  Code build_list;
  build_list.op({']', '}', 'b', '.'});
  EXPECT_NE(error_of(build_list).find("BUILD"), std::string::npos);
  Code call_string;
  call_string.str("os.system").op({')', 'R', '.'});
  EXPECT_NE(error_of(call_string).find("not a global"), std::string::npos);
}

TEST(PickleVm, RefusesMalformedTensorsAndStorages) {
  Code hooks;  // backward hooks would be code to run
  hooks.global("torch._utils", "_rebuild_tensor_v2").op({'(', '('}).str("storage").global("torch", "FloatStorage");
  hooks.str("0").str("cpu").op({'K', 1, 't', 'Q', 'K', 0, ')', ')', 0x89, '}', 'K', 1, 'K', 1, 's', 't', 'R', '.'});
  EXPECT_NE(error_of(hooks).find("backward hooks"), std::string::npos);
  Code rank;
  rank.tensor("FloatStorage", "0", 4, 0, {2, 2}, {1}).op({'.'});
  EXPECT_NE(error_of(rank).find("2 sizes but 1 strides"), std::string::npos);
  Code negative;
  negative.global("torch._utils", "_rebuild_tensor_v2").op({'(', '('}).str("storage").global("torch", "FloatStorage");
  negative.str("0").str("cpu").op({'K', 1, 't', 'Q', 'J', 0xff, 0xff, 0xff, 0xff, ')', ')', 0x89});
  negative.global("collections", "OrderedDict").op({')', 'R', 't', 'R', '.'});
  EXPECT_NE(error_of(negative).find("storage offset is not a whole number"), std::string::npos);
  Code pid;
  pid.op({'(', 'K', 1, 't', 'Q', '.'});
  EXPECT_NE(error_of(pid).find("persistent id"), std::string::npos);
  Code not_storage;
  not_storage.op({'(', 'X', 7, 0, 0, 0}).op({'s', 't', 'o', 'r', 'a', 'g', 'e'});
  not_storage.global("collections", "OrderedDict").str("0").str("cpu").op({'K', 1, 't', 'Q', '.'});
  EXPECT_NE(error_of(not_storage).find("no storage type"), std::string::npos);
}

TEST(PickleVm, RefusesBrokenStreams) {
  const std::vector<std::pair<std::vector<int>, std::string>> cases = {
      {{'N'}, "truncated"},                          // no STOP
      {{'X', 9, 0, 0, 0, 'a'}, "truncated"},          // string longer than the data
      {{'X', 0xff, 0xff, 0xff, 0xff}, "truncated"},  // 4 GiB string
      {{'c', 'o', 's'}, "truncated inside a GLOBAL"},
      {{'h', 3, '.'}, "never PUT"},
      {{'r', 0, 0, 0, 0, '.'}, "stack empty"},         // PUT with nothing to put
      {{'R', '.'}, "stack empty"},
      {{'(', 'N', 'R', '.'}, "stack empty"},            // REDUCE may not reach below a MARK
      {{'t', '.'}, "without a MARK"},
      {{'(', 'N', '.'}, "inside a MARK"},
      {{'N', 'N', '.'}, "2 values"},
      {{'.'}, "0 values"},
      {{'N', 'a', '.'}, "stack empty"},
      {{'N', 'N', 'a', '.'}, "not a list"},
      {{'}', '(', 'N', 'u', '.'}, "odd number"},
      {{']', 'N', 'N', 's', '.'}, "not a dict"},
      {{0x8a, 9, 0, 0, 0, 0, 0, 0, 0, 0, 0, '.'}, "too large"},
      {{'I', '1', '\n', '.'}, "opcode 0x49"},           // text INT: protocol 0
      {{0x95, 0, 0, 0, 0, 0, 0, 0, 0}, "opcode 0x95"},  // FRAME: protocol 4
      {{'0', '.'}, "opcode 0x30"},                      // POP
  };
  for (const auto& [bytes, expected] : cases) {
    Code c;
    c.op(std::initializer_list<int>{});
    for (int x : bytes) c.b.push_back(static_cast<std::uint8_t>(x));
    const std::string e = error_of(c);
    EXPECT_NE(e.find(expected), std::string::npos) << "expected \"" << expected << "\", got \"" << e << "\"";
    EXPECT_EQ(e.find("ckpt.pth: data.pkl: "), 0u) << e;
  }
  Code proto4;
  proto4.b = {0x80, 4, 'N', '.'};
  EXPECT_NE(error_of(proto4).find("protocol 4"), std::string::npos);
}

}  // namespace
}  // namespace vitattn::tensors::pickle
