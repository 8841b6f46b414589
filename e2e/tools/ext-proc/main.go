// ext-proc: an Envoy external processor (envoy.service.ext_proc.v3.ExternalProcessor/Process)
// written on the official Go types (go-control-plane), for the proxy's extProc tests. It answers
// every phase it is sent, the way a real processor would:
//
//	request headers   sets x-ext-proc-request: seen, x-ext-proc-path: <the :path it saw>,
//	                  appends x-ext-proc-append: added, removes x-ext-proc-remove
//	request body      replaces -from with -to in the body (or in each streamed chunk)
//	response headers  sets x-ext-proc-response: seen, x-ext-proc-status: <the :status it saw>,
//	                  removes x-ext-proc-remove
//	response body     replaces -from with -to, like the request body
//
// A request with the marker header x-ext-proc-immediate: <status> is answered at once at its
// request headers (that status, x-ext-proc-immediate: answered, a text body); with
// x-ext-proc-immediate-response: <status> it is answered at once at its response headers.
//
// Misbehaviour, for the tests of the proxy's failure modes: -mode (every stream) or the request
// header x-ext-proc-mode (that stream, read at its request headers):
//
//	hang          read every message, answer none
//	close         end the stream (status OK) without answering
//	error         end the stream with gRPC status INTERNAL
//	garbage       answer bytes that are not a ProcessingResponse
//	wrong-phase   answer a response body message to the request headers
//	many-headers  set -many headers at the request headers
//	big-body      replace the request body (or the response body) with -big bytes
//
// Prints "ext-proc listening on <host:port>" once it serves; SIGTERM stops it.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extproc "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

var (
	addr  = flag.String("addr", "127.0.0.1:0", "address to listen on")
	mode  = flag.String("mode", "normal", "normal, hang, close, error, garbage, wrong-phase, many-headers or big-body")
	from  = flag.String("from", "ext-proc-marker", "text replaced in bodies")
	to    = flag.String("to", "rewritten-by-processor", "its replacement")
	many  = flag.Int("many", 500, "headers set in many-headers mode")
	big   = flag.Int("big", 2*1024*1024, "bytes of the body in big-body mode")
	verbose = flag.Bool("log", false, "log each message to stderr")
)

// garbage is sent as it is by the codec below: bytes that do not decode as a ProcessingResponse.
type garbage []byte

// codec is gRPC's protobuf codec, except that it sends garbage values as raw bytes.
type codec struct{}

func (codec) Marshal(v any) ([]byte, error) {
	if g, ok := v.(garbage); ok {
		return g, nil
	}
	return proto.Marshal(v.(proto.Message))
}
func (codec) Unmarshal(data []byte, v any) error { return proto.Unmarshal(data, v.(proto.Message)) }
func (codec) Name() string                       { return "proto" }

type server struct {
	extproc.UnimplementedExternalProcessorServer
}

func header(h *corev3.HeaderMap, name string) (string, bool) {
	for _, v := range h.GetHeaders() {
		if strings.EqualFold(v.GetKey(), name) {
			if len(v.GetRawValue()) > 0 {
				return string(v.GetRawValue()), true
			}
			return v.GetValue(), true
		}
	}
	return "", false
}

func set(name, value string, action corev3.HeaderValueOption_HeaderAppendAction) *corev3.HeaderValueOption {
	return &corev3.HeaderValueOption{Header: &corev3.HeaderValue{Key: name, RawValue: []byte(value)}, AppendAction: action}
}

const overwrite = corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD

func headers(resp *extproc.CommonResponse) *extproc.HeadersResponse {
	return &extproc.HeadersResponse{Response: resp}
}

func immediate(code string, phase string) *extproc.ProcessingResponse {
	n, err := strconv.Atoi(code)
	if err != nil {
		n = 403
	}
	return &extproc.ProcessingResponse{Response: &extproc.ProcessingResponse_ImmediateResponse{ImmediateResponse: &extproc.ImmediateResponse{
		Status: &typev3.HttpStatus{Code: typev3.StatusCode(n)},
		Headers: &extproc.HeaderMutation{SetHeaders: []*corev3.HeaderValueOption{
			set("x-ext-proc-immediate", "answered", overwrite),
			set("content-type", "text/plain", overwrite),
		}},
		Body: []byte("answered by the processor at " + phase),
	}}}
}

func rewriteBody(b *extproc.HttpBody, streamMode string) *extproc.BodyResponse {
	body := b.GetBody()
	if streamMode == "big-body" {
		body = bytes.Repeat([]byte("x"), *big)
	} else {
		body = bytes.ReplaceAll(body, []byte(*from), []byte(*to))
	}
	return &extproc.BodyResponse{Response: &extproc.CommonResponse{
		BodyMutation: &extproc.BodyMutation{Mutation: &extproc.BodyMutation_Body{Body: body}},
	}}
}

func (server) Process(stream extproc.ExternalProcessor_ProcessServer) error {
	streamMode := *mode
	answerAtResponse := ""
	for {
		req, err := stream.Recv()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if *verbose {
			fmt.Fprintf(os.Stderr, "ext-proc: %v\n", req)
		}
		if h := req.GetRequestHeaders(); h != nil {
			if m, ok := header(h.GetHeaders(), "x-ext-proc-mode"); ok {
				streamMode = m
			}
			if code, ok := header(h.GetHeaders(), "x-ext-proc-immediate-response"); ok {
				answerAtResponse = code
			}
		}
		switch streamMode {
		case "hang":
			continue
		case "close":
			return nil
		case "error":
			return status.Error(codes.Internal, "the processor failed")
		case "garbage":
			if err := stream.SendMsg(garbage{0xff, 0xff, 0xff, 0xff, 0x0f}); err != nil {
				return err
			}
			continue
		case "wrong-phase":
			if err := stream.Send(&extproc.ProcessingResponse{Response: &extproc.ProcessingResponse_ResponseBody{ResponseBody: &extproc.BodyResponse{}}}); err != nil {
				return err
			}
			continue
		}
		var resp *extproc.ProcessingResponse
		switch r := req.Request.(type) {
		case *extproc.ProcessingRequest_RequestHeaders:
			if code, ok := header(r.RequestHeaders.GetHeaders(), "x-ext-proc-immediate"); ok {
				resp = immediate(code, "request headers")
				break
			}
			path, _ := header(r.RequestHeaders.GetHeaders(), ":path")
			mutation := &extproc.HeaderMutation{
				SetHeaders: []*corev3.HeaderValueOption{
					set("x-ext-proc-request", "seen", overwrite),
					set("x-ext-proc-path", path, overwrite),
					set("x-ext-proc-append", "added", corev3.HeaderValueOption_APPEND_IF_EXISTS_OR_ADD),
				},
				RemoveHeaders: []string{"x-ext-proc-remove"},
			}
			if streamMode == "many-headers" {
				for i := 0; i < *many; i++ {
					mutation.SetHeaders = append(mutation.SetHeaders, set(fmt.Sprintf("x-many-%d", i), "v", overwrite))
				}
			}
			resp = &extproc.ProcessingResponse{Response: &extproc.ProcessingResponse_RequestHeaders{RequestHeaders: headers(&extproc.CommonResponse{HeaderMutation: mutation})}}
		case *extproc.ProcessingRequest_RequestBody:
			resp = &extproc.ProcessingResponse{Response: &extproc.ProcessingResponse_RequestBody{RequestBody: rewriteBody(r.RequestBody, streamMode)}}
		case *extproc.ProcessingRequest_ResponseHeaders:
			if answerAtResponse != "" {
				resp = immediate(answerAtResponse, "response headers")
				break
			}
			code, _ := header(r.ResponseHeaders.GetHeaders(), ":status")
			resp = &extproc.ProcessingResponse{Response: &extproc.ProcessingResponse_ResponseHeaders{ResponseHeaders: headers(&extproc.CommonResponse{HeaderMutation: &extproc.HeaderMutation{
				SetHeaders:    []*corev3.HeaderValueOption{set("x-ext-proc-response", "seen", overwrite), set("x-ext-proc-status", code, overwrite)},
				RemoveHeaders: []string{"x-ext-proc-remove"},
			}})}}
		case *extproc.ProcessingRequest_ResponseBody:
			resp = &extproc.ProcessingResponse{Response: &extproc.ProcessingResponse_ResponseBody{ResponseBody: rewriteBody(r.ResponseBody, streamMode)}}
		default:
			return status.Errorf(codes.InvalidArgument, "unexpected message %T", r)
		}
		if err := stream.Send(resp); err != nil {
			return err
		}
	}
}

func main() {
	flag.Parse()
	lis, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "ext-proc:", err)
		os.Exit(1)
	}
	s := grpc.NewServer(grpc.ForceServerCodec(codec{}), grpc.MaxSendMsgSize(64*1024*1024))
	extproc.RegisterExternalProcessorServer(s, server{})
	go func() {
		ch := make(chan os.Signal, 1)
		signal.Notify(ch, syscall.SIGTERM, syscall.SIGINT)
		<-ch
		s.Stop()
	}()
	fmt.Printf("ext-proc listening on %s\n", lis.Addr())
	if err := s.Serve(lis); err != nil {
		fmt.Fprintln(os.Stderr, "ext-proc:", err)
		os.Exit(1)
	}
}
