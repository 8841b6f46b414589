// opa-envoy: OPA (the real `opa` command, its runtime, health API and Rego evaluator) with an
// Envoy external authorization plugin, for the extAuthz tests (packages/proxy/test/
// auth-ext-authz.test.ts). Built by scripts/install-test-tools.sh; the OPA version is
// e2e/tools.json's opaEnvoy.
//
// The plugin follows the configuration and the decision contract of OPA's own Envoy plugin
// (github.com/open-policy-agent/opa-envoy-plugin), whose module the Go module proxy reachable
// here does not serve:
//
//	opa run --server --addr=127.0.0.1:8181 \
//	  --set=plugins.envoy_ext_authz_grpc.addr=127.0.0.1:9191 \
//	  --set=plugins.envoy_ext_authz_grpc.path=envoy/authz/allow policy.rego
//
// serves envoy.service.auth.v3.Authorization/Check over gRPC (the official go-control-plane
// types), evaluates data.<path> with the input the plugin documents (the CheckRequest in
// protojson with proto field names, plus version, parsed_path, parsed_query, parsed_body and
// truncated_body) and maps the decision: a boolean, or an object with allowed, headers,
// response_headers_to_add, request_headers_to_remove, http_status and body.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strings"
	"sync"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	auth "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"github.com/open-policy-agent/opa/cmd"
	"github.com/open-policy-agent/opa/v1/plugins"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/runtime"
	"google.golang.org/genproto/googleapis/rpc/code"
	rpcstatus "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/encoding/protojson"
)

const pluginName = "envoy_ext_authz_grpc"

type config struct {
	Addr string `json:"addr"`
	Path string `json:"path"`
}

type factory struct{}

func (factory) Validate(_ *plugins.Manager, raw []byte) (any, error) {
	c := config{Addr: ":9191", Path: "envoy/authz/allow"}
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, err
	}
	if strings.Trim(c.Path, "/") == "" {
		return nil, errors.New("path: a package path such as envoy/authz/allow is required")
	}
	return &c, nil
}

func (factory) New(m *plugins.Manager, c any) plugins.Plugin {
	cfg := c.(*config)
	query := "data." + strings.ReplaceAll(strings.Trim(cfg.Path, "/"), "/", ".")
	return &plugin{manager: m, cfg: cfg, query: query}
}

type plugin struct {
	auth.UnimplementedAuthorizationServer
	manager *plugins.Manager
	cfg     *config
	query   string
	mu      sync.Mutex
	server  *grpc.Server
}

func (p *plugin) Start(context.Context) error {
	lis, err := net.Listen("tcp", p.cfg.Addr)
	if err != nil {
		p.manager.UpdatePluginStatus(pluginName, &plugins.Status{State: plugins.StateErr, Message: err.Error()})
		return err
	}
	s := grpc.NewServer()
	auth.RegisterAuthorizationServer(s, p)
	p.mu.Lock()
	p.server = s
	p.mu.Unlock()
	go func() { _ = s.Serve(lis) }()
	p.manager.UpdatePluginStatus(pluginName, &plugins.Status{State: plugins.StateOK})
	return nil
}

func (p *plugin) Stop(context.Context) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.server != nil {
		p.server.Stop()
	}
	p.manager.UpdatePluginStatus(pluginName, &plugins.Status{State: plugins.StateNotReady})
}

func (p *plugin) Reconfigure(context.Context, any) {}

// Check evaluates the policy; an evaluation that fails is a gRPC error, as the plugin answers.
func (p *plugin) Check(ctx context.Context, req *auth.CheckRequest) (*auth.CheckResponse, error) {
	input, err := toInput(req)
	if err != nil {
		return nil, err
	}
	rs, err := rego.New(
		rego.Query(p.query),
		rego.Compiler(p.manager.GetCompiler()),
		rego.Store(p.manager.Store),
		rego.Input(input),
	).Eval(ctx)
	if err != nil {
		return nil, err
	}
	if len(rs) == 0 || len(rs[0].Expressions) == 0 {
		return nil, errors.New("undefined decision")
	}
	return toResponse(rs[0].Expressions[0].Value)
}

func toInput(req *auth.CheckRequest) (map[string]any, error) {
	raw, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(req)
	if err != nil {
		return nil, err
	}
	input := map[string]any{}
	if err := json.Unmarshal(raw, &input); err != nil {
		return nil, err
	}
	input["version"] = map[string]any{"ext_authz": "v3", "encoding": "protojson"}
	h := req.GetAttributes().GetRequest().GetHttp()
	rawPath, rawQuery, _ := strings.Cut(h.GetPath(), "?")
	decoded, err := url.PathUnescape(rawPath)
	if err != nil {
		return nil, err
	}
	input["parsed_path"] = strings.Split(strings.TrimLeft(decoded, "/"), "/")
	query, err := url.ParseQuery(rawQuery)
	if err != nil {
		return nil, err
	}
	parsedQuery := map[string]any{}
	for k, v := range query {
		parsedQuery[k] = v
	}
	input["parsed_query"] = parsedQuery
	truncated := h.GetHeaders()["x-envoy-auth-partial-body"] == "true"
	input["truncated_body"] = truncated
	body := h.GetBody()
	if body == "" {
		body = string(h.GetRawBody())
	}
	if !truncated && body != "" && strings.Contains(h.GetHeaders()["content-type"], "application/json") {
		var parsed any
		if err := json.Unmarshal([]byte(body), &parsed); err != nil {
			return nil, fmt.Errorf("body: %w", err)
		}
		input["parsed_body"] = parsed
	}
	return input, nil
}

func toResponse(decision any) (*auth.CheckResponse, error) {
	obj, isObj := decision.(map[string]any)
	allowed, isBool := decision.(bool)
	if isObj {
		allowed, isBool = obj["allowed"].(bool)
	}
	if !isBool {
		return nil, fmt.Errorf("illegal value for policy evaluation result: %T", decision)
	}
	headers, err := headerOptions(obj["headers"])
	if err != nil {
		return nil, err
	}
	responseHeaders, err := headerOptions(obj["response_headers_to_add"])
	if err != nil {
		return nil, err
	}
	if allowed {
		var remove []string
		if list, ok := obj["request_headers_to_remove"].([]any); ok {
			for _, v := range list {
				if s, ok := v.(string); ok {
					remove = append(remove, s)
				}
			}
		}
		return &auth.CheckResponse{
			Status: &rpcstatus.Status{Code: int32(code.Code_OK)},
			HttpResponse: &auth.CheckResponse_OkResponse{OkResponse: &auth.OkHttpResponse{
				Headers: headers, HeadersToRemove: remove, ResponseHeadersToAdd: responseHeaders,
			}},
		}, nil
	}
	status := int32(http.StatusForbidden)
	if n, ok := obj["http_status"].(json.Number); ok {
		v, err := n.Int64()
		if err != nil || http.StatusText(int(v)) == "" {
			return nil, fmt.Errorf("invalid HTTP status code %v", n)
		}
		status = int32(v)
	}
	body, _ := obj["body"].(string)
	return &auth.CheckResponse{
		Status: &rpcstatus.Status{Code: int32(code.Code_PERMISSION_DENIED)},
		HttpResponse: &auth.CheckResponse_DeniedResponse{DeniedResponse: &auth.DeniedHttpResponse{
			Status: &typev3.HttpStatus{Code: typev3.StatusCode(status)}, Headers: headers, Body: body,
		}},
	}, nil
}

// headerOptions: an object of header name -> string or array of strings, in name order.
func headerOptions(v any) ([]*core.HeaderValueOption, error) {
	if v == nil {
		return nil, nil
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("type assertion error, expected headers to be of type 'object' but got '%T'", v)
	}
	names := make([]string, 0, len(obj))
	for k := range obj {
		names = append(names, k)
	}
	sort.Strings(names)
	var out []*core.HeaderValueOption
	for _, k := range names {
		values := []any{obj[k]}
		if list, ok := obj[k].([]any); ok {
			values = list
		}
		for _, value := range values {
			s, ok := value.(string)
			if !ok {
				return nil, fmt.Errorf("invalid value type %T for header '%s'", value, k)
			}
			out = append(out, &core.HeaderValueOption{Header: &core.HeaderValue{Key: k, Value: s}})
		}
	}
	return out, nil
}

func main() {
	runtime.RegisterPlugin(pluginName, factory{})
	if err := cmd.RootCommand.Execute(); err != nil {
		os.Exit(1)
	}
}
