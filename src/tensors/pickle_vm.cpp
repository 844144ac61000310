#include "tensors/pickle_vm.hpp"

#include <bit>
#include <cstdio>
#include <cstring>
#include <unordered_map>

#include "core/error.hpp"
#include "files/file_io.hpp"

namespace vitattn::tensors::pickle {
namespace {

struct StorageType {
  const char* name;
  DType dtype;
};

constexpr StorageType kStorageTypes[] = {
    {"FloatStorage", DType::F32}, {"DoubleStorage", DType::F64}, {"HalfStorage", DType::F16},
    {"BFloat16Storage", DType::BF16}, {"LongStorage", DType::I64}, {"IntStorage", DType::I32},
    {"ShortStorage", DType::I16}, {"CharStorage", DType::I8}, {"ByteStorage", DType::U8},
    {"BoolStorage", DType::BOOL},
};

// A global's name as messages show it: a hostile file may make it arbitrarily long.
std::string shorten(std::string s) {
  if (s.size() > 80) s = s.substr(0, 77) + "...";
  return s;
}

class Machine {
 public:
  Machine(std::span<const std::uint8_t> code, const std::string& source) : code_(code), source_(source) {}

  Unpickled run() {
    while (true) {
      const std::size_t at = pos_;
      const std::uint8_t op = byte();
      if (op == '.') break;  // STOP
      step(op, at);
    }
    if (!marks_.empty()) fail("ends inside a MARK");
    if (stack_.size() != 1) fail("ends with " + std::to_string(stack_.size()) + " values on the stack, not 1");
    out_.root = stack_.back();
    return std::move(out_);
  }

 private:
  [[noreturn]] void fail(const std::string& what) const { throw Error(source_ + ": " + what); }

  // --- reading the code ---
  std::span<const std::uint8_t> take(std::size_t n) {
    if (n > code_.size() - pos_) fail("pickle is truncated (wants " + std::to_string(n) + " bytes at byte " + std::to_string(pos_) + ")");
    const auto s = code_.subspan(pos_, n);
    pos_ += n;
    return s;
  }
  std::uint8_t byte() { return take(1)[0]; }
  std::uint64_t le(std::size_t n) {
    const auto s = take(n);
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < n; ++i) v |= static_cast<std::uint64_t>(s[i]) << (8 * i);
    return v;
  }
  std::string line() {  // GLOBAL's "module\n" and "name\n"
    const std::size_t start = pos_;
    while (pos_ < code_.size() && code_[pos_] != '\n') ++pos_;
    if (pos_ == code_.size()) fail("pickle is truncated inside a GLOBAL");
    return std::string(reinterpret_cast<const char*>(code_.data() + start), pos_++ - start);
  }

  // --- values ---
  Id make(Value v) {
    if (out_.values.size() >= kMaxValues) fail("pickle builds more than " + std::to_string(kMaxValues) + " values");
    out_.values.push_back(std::move(v));
    return static_cast<Id>(out_.values.size() - 1);
  }
  Id make(Kind k) {
    Value v;
    v.kind = k;
    return make(std::move(v));
  }
  Value& at(Id id) { return out_.values[id]; }
  void push(Id id) { stack_.push_back(id); }
  Id pop(const char* op) {
    if (stack_.size() <= floor()) fail(std::string(op) + " finds the stack empty");
    const Id id = stack_.back();
    stack_.pop_back();
    return id;
  }
  Id top(const char* op) {
    if (stack_.size() <= floor()) fail(std::string(op) + " finds the stack empty");
    return stack_.back();
  }
  std::size_t floor() const { return marks_.empty() ? 0 : marks_.back(); }
  std::vector<Id> pop_mark(const char* op) {
    if (marks_.empty()) fail(std::string(op) + " without a MARK");
    const std::size_t m = marks_.back();
    marks_.pop_back();
    std::vector<Id> items(stack_.begin() + static_cast<std::ptrdiff_t>(m), stack_.end());
    stack_.resize(m);
    return items;
  }
  Id tuple(std::vector<Id> items) {
    Value v;
    v.kind = Kind::tuple;
    v.items = std::move(items);
    return make(std::move(v));
  }

  void memo_put(std::uint64_t index) { memo_[index] = top("PUT"); }
  void memo_get(std::uint64_t index) {
    const auto it = memo_.find(index);
    if (it == memo_.end()) fail("GET of memo entry " + std::to_string(index) + ", which was never PUT");
    push(it->second);
  }

  Id global(const std::string& module, const std::string& name) {
    Value v;
    v.kind = Kind::global;
    if (module == "collections" && name == "OrderedDict") {
      v.global = Global::ordered_dict;
    } else if (module == "torch._utils" && name == "_rebuild_tensor_v2") {
      v.global = Global::rebuild_tensor;
    } else if (module == "argparse" && name == "Namespace") {
      v.global = Global::namespace_;
    } else {
      bool storage = false;
      if (module == "torch")
        for (const auto& t : kStorageTypes)
          if (name == t.name) v.global = Global::storage_type, v.dtype = t.dtype, storage = true;
      if (!storage)
        fail("refers to " + files::printable(shorten(module + "." + name), true) +
             ", which vitattn does not accept (only tensors, their storages, OrderedDict, plain containers and "
             "argparse.Namespace; nothing in the file is run)");
    }
    v.text = module + "." + name;
    return make(std::move(v));
  }

  bool is(Id id, Kind k) const { return out_.values[id].kind == k; }
  std::uint64_t whole(Id id, const char* what) const {
    const Value& v = out_.values[id];
    if (v.kind != Kind::integer || v.integer < 0) fail(std::string("tensor ") + what + " is not a whole number");
    return static_cast<std::uint64_t>(v.integer);
  }
  std::vector<std::uint64_t> wholes(Id id, const char* what) const {
    const Value& v = out_.values[id];
    if (v.kind != Kind::tuple) fail(std::string("tensor ") + what + " is not a tuple");
    if (v.items.size() > kMaxRank) fail(std::string("tensor ") + what + " has more than " + std::to_string(kMaxRank) + " dimensions");
    std::vector<std::uint64_t> out;
    for (Id i : v.items) out.push_back(whole(i, what));
    return out;
  }

  // torch._utils._rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad,
  // backward_hooks[, metadata]): only recorded; pth_reader checks it against the storage.
  Id rebuild_tensor(const Value& args) {
    if (args.items.size() != 6 && args.items.size() != 7) fail("_rebuild_tensor_v2 takes 6 or 7 arguments, not " + std::to_string(args.items.size()));
    if (!is(args.items[0], Kind::storage)) fail("_rebuild_tensor_v2 is not given a storage");
    Value t;
    t.kind = Kind::tensor;
    t.items = {args.items[0]};
    t.offset = whole(args.items[1], "storage offset");
    t.sizes = wholes(args.items[2], "size");
    t.strides = wholes(args.items[3], "stride");
    if (t.sizes.size() != t.strides.size()) fail("tensor has " + std::to_string(t.sizes.size()) + " sizes but " + std::to_string(t.strides.size()) + " strides");
    if (!is(args.items[4], Kind::boolean)) fail("tensor requires_grad is not a bool");
    if (!is(args.items[5], Kind::dict) || !at(args.items[5]).items.empty()) fail("tensor has backward hooks");
    return make(std::move(t));
  }

  Id reduce(Id callable, Id args_id) {
    const Value& f = at(callable);
    if (!is(args_id, Kind::tuple)) fail("REDUCE arguments are not a tuple");
    const Value& args = at(args_id);
    if (f.kind != Kind::global) fail("REDUCE calls something that is not a global");
    if (f.global == Global::ordered_dict && args.items.empty()) return make(Kind::dict);
    if (f.global == Global::rebuild_tensor) return rebuild_tensor(args);
    fail("REDUCE of " + f.text + " with these arguments is not accepted");
  }

  // ('storage', torch.<Type>Storage, key, location, numel)
  Id persistent(Id pid_id) {
    const Value& pid = at(pid_id);
    if (pid.kind != Kind::tuple || pid.items.size() != 5 || !is(pid.items[0], Kind::string) ||
        at(pid.items[0]).text != "storage")
      fail("persistent id is not ('storage', type, key, location, numel)");
    const Value& type = at(pid.items[1]);
    if (type.kind != Kind::global || type.global != Global::storage_type) fail("persistent id names no storage type");
    if (!is(pid.items[2], Kind::string) || !is(pid.items[3], Kind::string)) fail("storage key or location is not a string");
    Value s;
    s.kind = Kind::storage;
    s.dtype = type.dtype;
    s.text = at(pid.items[2]).text;
    s.numel = whole(pid.items[4], "storage size");
    return make(std::move(s));
  }

  void build(Id target, Id state) {
    Value& t = at(target);
    const Kind sk = at(state).kind;
    if (t.kind == Kind::dict && (sk == Kind::dict || sk == Kind::none)) return;  // OrderedDict's _metadata: unused
    // Once only: a second BUILD would copy the state again, and a file repeating it could
    // spend quadratic time.
    if (t.kind == Kind::namespace_ && sk == Kind::dict && t.items.empty()) {
      at(target).items = at(state).items;
      return;
    }
    fail("BUILD of a " + std::string(t.kind == Kind::global ? at(target).text : "value") + " is not accepted");
  }

  void append(Id list, const std::vector<Id>& items, const char* op) {
    if (!is(list, Kind::list)) fail(std::string(op) + " on something that is not a list");
    auto& l = at(list).items;
    l.insert(l.end(), items.begin(), items.end());
  }
  void set_items(Id dict, const std::vector<Id>& kv, const char* op) {
    if (!is(dict, Kind::dict)) fail(std::string(op) + " on something that is not a dict");
    if (kv.size() % 2) fail(std::string(op) + " with an odd number of keys and values");
    auto& d = at(dict).items;
    d.insert(d.end(), kv.begin(), kv.end());
  }

  void step(std::uint8_t op, std::size_t at_byte) {
    switch (op) {
      case 0x80: {  // PROTO
        const std::uint8_t v = byte();
        if (v > 2) fail("pickle protocol " + std::to_string(v) + "; torch.save writes protocol 2");
        return;
      }
      case '(': marks_.push_back(stack_.size()); return;  // MARK
      case '}': push(make(Kind::dict)); return;           // EMPTY_DICT
      case ']': push(make(Kind::list)); return;           // EMPTY_LIST
      case ')': push(tuple({})); return;                  // EMPTY_TUPLE
      case 't': push(tuple(pop_mark("TUPLE"))); return;
      case 0x85: case 0x86: case 0x87: {  // TUPLE1..3
        std::vector<Id> items(static_cast<std::size_t>(op - 0x84));
        for (auto i = items.size(); i-- > 0;) items[i] = pop("TUPLE");
        push(tuple(std::move(items)));
        return;
      }
      case 'N': push(make(Kind::none)); return;
      case 0x88: case 0x89: {  // NEWTRUE, NEWFALSE
        Value v;
        v.kind = Kind::boolean;
        v.boolean = op == 0x88;
        push(make(std::move(v)));
        return;
      }
      case 'J': case 'K': case 'M': {  // BININT (signed 32), BININT1, BININT2 (unsigned)
        Value v;
        v.kind = Kind::integer;
        v.integer = op == 'J' ? static_cast<std::int32_t>(le(4)) : static_cast<std::int64_t>(le(op == 'K' ? 1 : 2));
        push(make(std::move(v)));
        return;
      }
      case 0x8a: {  // LONG1: n bytes, two's complement little-endian
        const std::size_t n = byte();
        if (n > 8) fail("integer of " + std::to_string(n) + " bytes is too large");
        std::uint64_t u = le(n);
        if (n > 0 && n < 8 && (u >> (8 * n - 1)) & 1) u |= ~std::uint64_t{0} << (8 * n);  // sign-extend
        Value v;
        v.kind = Kind::integer;
        v.integer = static_cast<std::int64_t>(u);
        push(make(std::move(v)));
        return;
      }
      case 'G': {  // BINFLOAT: big-endian double
        const auto s = take(8);
        std::uint64_t bits = 0;
        for (int i = 0; i < 8; ++i) bits = bits << 8 | s[static_cast<std::size_t>(i)];
        Value v;
        v.kind = Kind::real;
        v.real = std::bit_cast<double>(bits);
        push(make(std::move(v)));
        return;
      }
      case 'X': {  // BINUNICODE
        const std::uint64_t n = le(4);
        const auto s = take(static_cast<std::size_t>(n));
        Value v;
        v.kind = Kind::string;
        v.text.assign(reinterpret_cast<const char*>(s.data()), s.size());
        push(make(std::move(v)));
        return;
      }
      case 'q': memo_put(le(1)); return;  // BINPUT
      case 'r': memo_put(le(4)); return;  // LONG_BINPUT
      case 'h': memo_get(le(1)); return;  // BINGET
      case 'j': memo_get(le(4)); return;  // LONG_BINGET
      case 'a': {                         // APPEND
        const Id item = pop("APPEND");
        append(top("APPEND"), {item}, "APPEND");
        return;
      }
      case 'e': {  // APPENDS
        const auto items = pop_mark("APPENDS");
        append(top("APPENDS"), items, "APPENDS");
        return;
      }
      case 's': {  // SETITEM
        const Id value = pop("SETITEM");
        const Id key = pop("SETITEM");
        set_items(top("SETITEM"), {key, value}, "SETITEM");
        return;
      }
      case 'u': {  // SETITEMS
        const auto kv = pop_mark("SETITEMS");
        set_items(top("SETITEMS"), kv, "SETITEMS");
        return;
      }
      case 'c': {  // GLOBAL
        const std::string module = line();
        const std::string name = line();
        push(global(module, name));
        return;
      }
      case 'R': {  // REDUCE
        const Id args = pop("REDUCE");
        const Id callable = pop("REDUCE");
        push(reduce(callable, args));
        return;
      }
      case 0x81: {  // NEWOBJ: only argparse.Namespace(), whose attributes BUILD then sets
        const Id args = pop("NEWOBJ");
        const Id cls = pop("NEWOBJ");
        if (!is(cls, Kind::global) || at(cls).global != Global::namespace_ || !is(args, Kind::tuple) ||
            !at(args).items.empty())
          fail("NEWOBJ of " + (is(cls, Kind::global) ? at(cls).text : std::string("a value")) + " is not accepted");
        push(make(Kind::namespace_));
        return;
      }
      case 'b': {  // BUILD
        const Id state = pop("BUILD");
        build(top("BUILD"), state);
        return;
      }
      case 'Q': push(persistent(pop("BINPERSID"))); return;  // BINPERSID
      default: {
        char hex[8];
        std::snprintf(hex, sizeof hex, "0x%02x", op);
        fail(std::string("pickle opcode ") + hex + " at byte " + std::to_string(at_byte) + " is not one torch.save writes");
      }
    }
  }

  std::span<const std::uint8_t> code_;
  const std::string& source_;
  std::size_t pos_ = 0;
  Unpickled out_;
  std::vector<Id> stack_;
  std::vector<std::size_t> marks_;
  std::unordered_map<std::uint64_t, Id> memo_;
};

}  // namespace

const Value* Unpickled::lookup(const Value& dict, const std::string& key) const {
  const Value* found = nullptr;
  for (std::size_t i = 0; i + 1 < dict.items.size(); i += 2)
    if (at(dict.items[i]).kind == Kind::string && at(dict.items[i]).text == key) found = &at(dict.items[i + 1]);
  return found;
}

Unpickled unpickle(std::span<const std::uint8_t> pickle, const std::string& source) {
  return Machine(pickle, source).run();
}

}  // namespace vitattn::tensors::pickle
