// envoy-proto: Envoy API messages read and written by the official Go types (go-control-plane,
// generated from Envoy's .proto files), for the tests that check Tollgate's own codecs against
// Envoy's definitions rather than against themselves.
//
//	envoy-proto describe <message>...   fields of each message (and the messages they use), JSON
//	envoy-proto decode <message>        binary message on stdin -> protojson (proto field names)
//	envoy-proto encode <message>        protojson on stdin -> binary message
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
)

type field struct {
	Number   int32  `json:"number"`
	Kind     string `json:"kind"`
	Repeated bool   `json:"repeated"`
	Type     string `json:"type,omitempty"`
}

func lookup(name string) protoreflect.MessageType {
	t, err := protoregistry.GlobalTypes.FindMessageByName(protoreflect.FullName(name))
	if err != nil {
		fail("unknown message %s: %v", name, err)
	}
	return t
}

func describe(names []string) {
	out := map[string]map[string]field{}
	var walk func(d protoreflect.MessageDescriptor)
	walk = func(d protoreflect.MessageDescriptor) {
		if _, seen := out[string(d.FullName())]; seen {
			return
		}
		fields := map[string]field{}
		out[string(d.FullName())] = fields
		for i := 0; i < d.Fields().Len(); i++ {
			f := d.Fields().Get(i)
			ff := field{Number: int32(f.Number()), Kind: f.Kind().String(), Repeated: f.Cardinality() == protoreflect.Repeated}
			switch f.Kind() {
			case protoreflect.MessageKind:
				ff.Type = string(f.Message().FullName())
				walk(f.Message())
			case protoreflect.EnumKind:
				ff.Type = string(f.Enum().FullName())
			}
			fields[string(f.Name())] = ff
		}
	}
	for _, n := range names {
		walk(lookup(n).Descriptor())
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		fail("%v", err)
	}
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "envoy-proto: "+format+"\n", args...)
	os.Exit(1)
}

func main() {
	if len(os.Args) < 3 {
		fail("usage: envoy-proto describe <message>... | decode <message> | encode <message>")
	}
	switch os.Args[1] {
	case "describe":
		describe(os.Args[2:])
	case "decode":
		in, err := io.ReadAll(os.Stdin)
		if err != nil {
			fail("%v", err)
		}
		m := lookup(os.Args[2]).New().Interface()
		if err := proto.Unmarshal(in, m); err != nil {
			fail("decode %s: %v", os.Args[2], err)
		}
		if unknown := m.ProtoReflect().GetUnknown(); len(unknown) > 0 {
			fail("decode %s: %d bytes of fields %s does not define", os.Args[2], len(unknown), os.Args[2])
		}
		out, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(m)
		if err != nil {
			fail("%v", err)
		}
		os.Stdout.Write(out)
	case "encode":
		in, err := io.ReadAll(os.Stdin)
		if err != nil {
			fail("%v", err)
		}
		m := lookup(os.Args[2]).New().Interface()
		if err := (protojson.UnmarshalOptions{}).Unmarshal(in, m); err != nil {
			fail("encode %s: %v", os.Args[2], err)
		}
		out, err := proto.Marshal(m)
		if err != nil {
			fail("%v", err)
		}
		os.Stdout.Write(out)
	default:
		fail("unknown command %s", os.Args[1])
	}
}
