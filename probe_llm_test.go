//go:build linux

package main

// netprobe mockllm: a scripted OpenAI-compatible model API on 127.0.0.1 for
// the agent scripts (testdata/agents). It speaks the two wire formats the
// tested agents use:
//
//   - Chat Completions (`POST /v1/chat/completions`, grok-cli through the
//     openai npm package): a JSON chat.completion, or SSE chunks ending in
//     `data: [DONE]` when the request asks for "stream": true.
//   - Responses (`POST /v1/responses`, Codex CLI with wire_api =
//     "responses"): an SSE stream of response.created,
//     response.output_item.added/done and response.completed events.
//
// It is stateless: the step it answers is the number of tool results the
// request carries (messages with role "tool", or input items of a
// *_call_output type), so a retried request gets the same answer. Each step
// of the script is one tool call, or the final text:
//
//	shell COMMAND...   the agent's shell tool (grok: bash; codex: its shell tool)
//	read PATH          the agent's own file-reading tool (grok: view_file;
//	                   codex has none: apply_patch updating PATH, see below)
//	write PATH TEXT    the agent's own file-writing tool (grok: create_file;
//	                   codex: apply_patch adding PATH)
//	final TEXT         a text answer: the end of the turn
//
// "${VAR}" in the script is the mock's environment, and ${ADDR} its own
// address (a bare $ is left to the agent's shell). Codex has no tool that returns a file's contents other than
// its shell; "read PATH" becomes an apply_patch that replaces the line
// "SECRET=..." of PATH with "PATCHED=by-the-agent": it succeeds only if the
// agent could read (and write) PATH.
//
// In DIR it writes addr (HOST:PORT), then ready; requests.log (one line a
// request: method, path, agent, step); tool-results.log (the tool result
// each request carries for the previous step, as the agent reported it);
// bodies/NNN.json (each request body); child.log (one line for each
// request to /child, the shell probes' target). It serves until DIR/stop
// appears or a signal comes.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// scriptVar is what the mock expands in a script: ${NAME} only, so that the
// shell's own $? and $VAR pass through to the agent's shell.
var scriptVar = regexp.MustCompile(`\$\{[A-Za-z_][A-Za-z0-9_]*\}`)

type llmStep struct {
	kind string // shell, read, write, final
	arg  string // command, path or text
	text string // write's content
}

type mockLLM struct {
	dir   string
	steps []llmStep
	mu    sync.Mutex
	n     int
}

func probeMockLLM(args []string) error {
	if len(args) != 3 {
		return fmt.Errorf("usage: mockllm ADDR SCRIPT DIR")
	}
	addr, scriptFile, dir := args[0], args[1], args[2]
	if err := os.MkdirAll(filepath.Join(dir, "bodies"), 0o777); err != nil {
		return err
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	raw, err := os.ReadFile(scriptFile)
	if err != nil {
		return err
	}
	own := l.Addr().String()
	expanded := scriptVar.ReplaceAllStringFunc(string(raw), func(v string) string {
		v = v[2 : len(v)-1]
		if v == "ADDR" {
			return own
		}
		return os.Getenv(v)
	})
	m := &mockLLM{dir: dir}
	for _, line := range strings.Split(expanded, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		kind, rest, _ := strings.Cut(line, " ")
		st := llmStep{kind: kind, arg: rest}
		switch kind {
		case "shell", "read", "final":
		case "write":
			st.arg, st.text, _ = strings.Cut(rest, " ")
		default:
			return fmt.Errorf("%s: unknown step %q", scriptFile, line)
		}
		m.steps = append(m.steps, st)
	}
	if len(m.steps) == 0 || m.steps[len(m.steps)-1].kind != "final" {
		return fmt.Errorf("%s: the last step must be final", scriptFile)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/child", func(w http.ResponseWriter, r *http.Request) {
		m.appendFile("child.log", fmt.Sprintf("%s %s from %s\n", r.Method, r.URL.Path, r.RemoteAddr))
		fmt.Fprintln(w, "CHILD-REACHED-THE-MOCK")
	})
	mux.HandleFunc("/", m.serve)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(l)
	if err := os.WriteFile(filepath.Join(dir, "addr"), []byte(own+"\n"), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "ready"), nil, 0o644); err != nil {
		return err
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, unix.SIGTERM)
	for {
		select {
		case <-sigs:
			return srv.Close()
		case <-time.After(50 * time.Millisecond):
		}
		if _, err := os.Stat(filepath.Join(dir, "stop")); err == nil {
			return srv.Close()
		}
	}
}

func (m *mockLLM) appendFile(name, s string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	f, err := os.OpenFile(filepath.Join(m.dir, name), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return
	}
	f.WriteString(s)
	f.Close()
}

func (m *mockLLM) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	m.mu.Lock()
	m.n++
	n := m.n
	m.mu.Unlock()
	os.WriteFile(filepath.Join(m.dir, "bodies", fmt.Sprintf("%03d.json", n)), body, 0o644)
	var req map[string]any
	json.Unmarshal(body, &req)
	agent := "?"
	switch {
	case r.Method == "POST" && strings.HasSuffix(r.URL.Path, "/chat/completions"):
		agent = "chat"
	case r.Method == "POST" && strings.HasSuffix(r.URL.Path, "/responses"):
		agent = "responses"
	case r.Method == "POST" && strings.HasSuffix(r.URL.Path, "/v1/messages"):
		agent = "messages"
	case r.Method == "POST" && strings.Contains(r.URL.Path, ":streamGenerateContent"), r.Method == "POST" && strings.Contains(r.URL.Path, ":generateContent"):
		agent = "gemini"
	}
	var step int
	var last string
	switch agent {
	case "chat":
		step, last = chatToolResults(req)
	case "responses":
		step, last = responsesToolResults(req)
	case "messages":
		step, last = messagesToolResults(req)
	case "gemini":
		step, last = geminiToolResults(req)
	}
	m.appendFile("requests.log", fmt.Sprintf("%03d %s %s api=%s step=%d\n", n, r.Method, r.URL.Path, agent, step))
	if step > 0 {
		m.appendFile("tool-results.log", fmt.Sprintf("--- request %03d, result of step %d (%s):\n%s\n", n, step, m.steps[min(step, len(m.steps))-1].kind, last))
	}
	if agent == "?" {
		// /v1/models and the like: an empty list, never an error that
		// could make an agent retry.
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"object":"list","data":[]}`)
		return
	}
	st := m.steps[min(step, len(m.steps)-1)]
	if agent == "gemini" {
		// Side requests (a next-speaker check, a summary) offer no tools.
		if tools, _ := req["tools"].([]any); len(tools) == 0 {
			st = llmStep{kind: "final", arg: "ok"}
			// A request for JSON (Gemini CLI's model router) gets an
			// object of its schema.
			if gc, _ := req["generationConfig"].(map[string]any); gc != nil {
				if schema, ok := gc["responseJsonSchema"].(map[string]any); ok {
					st.arg = mustJSON(fromSchema(schema))
				} else if schema, ok := gc["responseSchema"].(map[string]any); ok {
					st.arg = mustJSON(fromSchema(schema))
				}
			}
		}
		writeGemini(w, n, st, strings.Contains(r.URL.Path, ":streamGenerateContent"))
		return
	}
	if agent == "messages" {
		// An agent's side requests (a title, a quota check) offer no
		// tools: they get a plain answer, the script's steps are for the
		// turn that offers them.
		if tools, _ := req["tools"].([]any); len(tools) == 0 {
			st = llmStep{kind: "final", arg: "ok"}
		}
		writeMessages(w, n, st)
		return
	}
	if agent == "chat" {
		stream, _ := req["stream"].(bool)
		writeChat(w, n, st, stream, chatTools(req))
		return
	}
	writeResponses(w, n, st, toolNames(req))
}

// geminiToolResults counts the functionResponse parts of a Gemini
// generateContent request and returns the last one's response.
func geminiToolResults(req map[string]any) (int, string) {
	contents, _ := req["contents"].([]any)
	n, last := 0, ""
	for _, c := range contents {
		cm, _ := c.(map[string]any)
		parts, _ := cm["parts"].([]any)
		for _, p := range parts {
			pm, _ := p.(map[string]any)
			if fr, ok := pm["functionResponse"]; ok {
				n++
				last = contentText(fr)
			}
		}
	}
	return n, last
}

// fromSchema is a small value of a JSON schema: every property, strings
// "ok", numbers 1, booleans false, arrays empty.
func fromSchema(schema map[string]any) any {
	t, _ := schema["type"].(string)
	switch strings.ToLower(t) {
	case "object":
		out := map[string]any{}
		props, _ := schema["properties"].(map[string]any)
		for k, v := range props {
			vm, _ := v.(map[string]any)
			out[k] = fromSchema(vm)
		}
		return out
	case "array":
		return []any{}
	case "integer", "number":
		return 1
	case "boolean":
		return false
	}
	if e, ok := schema["enum"].([]any); ok && len(e) > 0 {
		return e[0]
	}
	return "ok"
}

// writeGemini answers a Gemini generateContent request (SSE for
// streamGenerateContent?alt=sse): one functionCall part, or the final text.
func writeGemini(w http.ResponseWriter, n int, st llmStep, stream bool) {
	var part map[string]any
	switch st.kind {
	case "shell":
		part = map[string]any{"functionCall": map[string]any{"name": "run_shell_command", "args": map[string]any{"command": st.arg}}}
	case "read":
		part = map[string]any{"functionCall": map[string]any{"name": "read_file", "args": map[string]any{"file_path": st.arg}}}
	case "write":
		part = map[string]any{"functionCall": map[string]any{"name": "write_file", "args": map[string]any{"file_path": st.arg, "content": st.text + "\n"}}}
	default:
		part = map[string]any{"text": st.arg}
	}
	resp := mustJSON(map[string]any{
		"candidates":    []any{map[string]any{"content": map[string]any{"role": "model", "parts": []any{part}}, "finishReason": "STOP", "index": 0}},
		"usageMetadata": map[string]int{"promptTokenCount": 1, "candidatesTokenCount": 1, "totalTokenCount": 2},
		"modelVersion":  "gemini-mock", "responseId": fmt.Sprintf("resp-%03d", n),
	})
	if !stream {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, resp)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	fmt.Fprintf(w, "data: %s\n\n", resp)
}

// messagesToolResults counts the tool_result blocks of an Anthropic
// Messages request and returns the last one's content.
func messagesToolResults(req map[string]any) (int, string) {
	msgs, _ := req["messages"].([]any)
	n, last := 0, ""
	for _, m := range msgs {
		mm, _ := m.(map[string]any)
		blocks, _ := mm["content"].([]any)
		for _, b := range blocks {
			bm, _ := b.(map[string]any)
			if bm["type"] == "tool_result" {
				n++
				last = contentText(bm["content"])
			}
		}
	}
	return n, last
}

// messagesCall is Claude Code's tool call for a step: name and input.
func messagesCall(st llmStep) (string, map[string]any) {
	switch st.kind {
	case "shell":
		return "Bash", map[string]any{"command": st.arg, "description": "scripted step"}
	case "read":
		return "Read", map[string]any{"file_path": st.arg}
	case "write":
		return "Write", map[string]any{"file_path": st.arg, "content": st.text + "\n"}
	}
	return "", nil
}

// writeMessages answers an Anthropic Messages request with an SSE stream
// (Claude Code always streams): one tool_use block, or the final text.
func writeMessages(w http.ResponseWriter, n int, st llmStep) {
	w.Header().Set("Content-Type", "text/event-stream")
	var b bytes.Buffer
	ev := func(typ string, fields map[string]any) {
		fields["type"] = typ
		fmt.Fprintf(&b, "event: %s\ndata: %s\n\n", typ, mustJSON(fields))
	}
	usage := map[string]int{"input_tokens": 1, "output_tokens": 1}
	ev("message_start", map[string]any{"message": map[string]any{"id": fmt.Sprintf("msg_%03d", n), "type": "message", "role": "assistant",
		"model": "claude-mock", "content": []any{}, "stop_reason": nil, "stop_sequence": nil, "usage": usage}})
	stop := "end_turn"
	if st.kind == "final" {
		ev("content_block_start", map[string]any{"index": 0, "content_block": map[string]any{"type": "text", "text": ""}})
		ev("content_block_delta", map[string]any{"index": 0, "delta": map[string]any{"type": "text_delta", "text": st.arg}})
	} else {
		name, input := messagesCall(st)
		ev("content_block_start", map[string]any{"index": 0, "content_block": map[string]any{"type": "tool_use", "id": fmt.Sprintf("toolu_%03d", n), "name": name, "input": map[string]any{}}})
		ev("content_block_delta", map[string]any{"index": 0, "delta": map[string]any{"type": "input_json_delta", "partial_json": mustJSON(input)}})
		stop = "tool_use"
	}
	ev("content_block_stop", map[string]any{"index": 0})
	ev("message_delta", map[string]any{"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]int{"output_tokens": 1}})
	ev("message_stop", map[string]any{})
	w.Write(b.Bytes())
}

// chatToolResults counts the tool messages of a chat request and returns the
// last one's content.
func chatToolResults(req map[string]any) (int, string) {
	msgs, _ := req["messages"].([]any)
	n, last := 0, ""
	for _, m := range msgs {
		mm, _ := m.(map[string]any)
		if mm["role"] == "tool" {
			n++
			last = contentText(mm["content"])
		}
	}
	return n, last
}

// responsesToolResults counts the *_call_output input items of a Responses
// request and returns the last one's output.
func responsesToolResults(req map[string]any) (int, string) {
	items, _ := req["input"].([]any)
	n, last := 0, ""
	for _, it := range items {
		im, _ := it.(map[string]any)
		if t, _ := im["type"].(string); strings.HasSuffix(t, "_call_output") {
			n++
			last = contentText(im["output"])
		}
	}
	return n, last
}

func contentText(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case nil:
		return ""
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// toolNames maps each tool a Responses request offers to its type
// (function, custom, local_shell, ...).
func toolNames(req map[string]any) map[string]string {
	names := map[string]string{}
	tools, _ := req["tools"].([]any)
	for _, t := range tools {
		tm, _ := t.(map[string]any)
		typ, _ := tm["type"].(string)
		name, _ := tm["name"].(string)
		if name == "" {
			name = typ
		}
		names[name] = typ
	}
	return names
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// chatTools maps each function a chat request offers to its parameters'
// names.
func chatTools(req map[string]any) map[string][]string {
	out := map[string][]string{}
	tools, _ := req["tools"].([]any)
	for _, t := range tools {
		tm, _ := t.(map[string]any)
		fn, _ := tm["function"].(map[string]any)
		name, _ := fn["name"].(string)
		params, _ := fn["parameters"].(map[string]any)
		props, _ := params["properties"].(map[string]any)
		var names []string
		for k := range props {
			names = append(names, k)
		}
		out[name] = names
	}
	return out
}

// chatCall is the tool call for a step: name and JSON arguments. grok-cli
// offers bash, view_file and create_file; opencode bash, read and write,
// whose path parameter is named filePath.
func chatCall(st llmStep, tools map[string][]string) (string, string) {
	if _, ok := tools["read"]; ok {
		switch st.kind {
		case "shell":
			return "bash", mustJSON(map[string]string{"command": st.arg, "description": "scripted step"})
		case "read":
			return "read", mustJSON(map[string]string{"filePath": st.arg})
		case "write":
			return "write", mustJSON(map[string]string{"filePath": st.arg, "content": st.text + "\n"})
		}
	}
	switch st.kind {
	case "shell":
		return "bash", mustJSON(map[string]string{"command": st.arg})
	case "read":
		return "view_file", mustJSON(map[string]string{"path": st.arg})
	case "write":
		return "create_file", mustJSON(map[string]string{"path": st.arg, "content": st.text + "\n"})
	}
	return "", ""
}

func writeChat(w http.ResponseWriter, n int, st llmStep, stream bool, tools map[string][]string) {
	id := fmt.Sprintf("chatcmpl-%03d", n)
	created := time.Now().Unix()
	msg := map[string]any{"role": "assistant", "content": nil}
	finish := "tool_calls"
	var call map[string]any
	if st.kind == "final" {
		msg["content"] = st.arg
		finish = "stop"
	} else {
		name, args := chatCall(st, tools)
		call = map[string]any{"id": fmt.Sprintf("call_%03d", n), "type": "function",
			"function": map[string]any{"name": name, "arguments": args}}
		msg["tool_calls"] = []any{call}
	}
	usage := map[string]int{"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
	if !stream {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, mustJSON(map[string]any{
			"id": id, "object": "chat.completion", "created": created, "model": "mock",
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
			"usage":   usage,
		}))
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	chunk := func(delta map[string]any, finish any) {
		fmt.Fprintf(w, "data: %s\n\n", mustJSON(map[string]any{
			"id": id, "object": "chat.completion.chunk", "created": created, "model": "mock",
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}},
		}))
	}
	chunk(map[string]any{"role": "assistant", "content": ""}, nil)
	if call != nil {
		call["index"] = 0
		chunk(map[string]any{"tool_calls": []any{call}}, nil)
	} else {
		chunk(map[string]any{"content": st.arg}, nil)
	}
	chunk(map[string]any{}, finish)
	fmt.Fprint(w, "data: [DONE]\n\n")
}

// responsesItem is Codex's output item for a step.
func responsesItem(n int, st llmStep, tools map[string]string) map[string]any {
	callID := fmt.Sprintf("call_%03d", n)
	fn := func(name string, args any) map[string]any {
		return map[string]any{"type": "function_call", "id": fmt.Sprintf("fc_%03d", n), "call_id": callID,
			"name": name, "arguments": mustJSON(args), "status": "completed"}
	}
	patch := func(p string) map[string]any {
		if tools["apply_patch"] == "function" {
			return fn("apply_patch", map[string]string{"input": p})
		}
		return map[string]any{"type": "custom_tool_call", "id": fmt.Sprintf("ctc_%03d", n), "call_id": callID,
			"name": "apply_patch", "input": p, "status": "completed"}
	}
	switch st.kind {
	case "shell":
		switch {
		case tools["exec_command"] != "":
			return fn("exec_command", map[string]any{"cmd": st.arg, "yield_time_ms": 10000})
		case tools["shell_command"] != "":
			return fn("shell_command", map[string]any{"command": st.arg, "timeout_ms": 20000})
		case tools["local_shell"] != "":
			return map[string]any{"type": "local_shell_call", "id": fmt.Sprintf("lsh_%03d", n), "call_id": callID,
				"status": "completed", "action": map[string]any{"type": "exec", "command": []string{"bash", "-c", st.arg}}}
		default:
			return fn("shell", map[string]any{"command": []string{"bash", "-c", st.arg}, "timeout_ms": 20000})
		}
	case "read":
		if tools["read_file"] != "" {
			return fn("read_file", map[string]any{"file_path": st.arg})
		}
		return patch("*** Begin Patch\n*** Update File: " + st.arg + "\n@@\n-SECRET=do-not-read-me\n+PATCHED=by-the-agent\n*** End Patch\n")
	case "write":
		return patch("*** Begin Patch\n*** Add File: " + st.arg + "\n+" + st.text + "\n*** End Patch\n")
	}
	return map[string]any{"type": "message", "role": "assistant", "id": fmt.Sprintf("msg_%03d", n), "status": "completed",
		"content": []any{map[string]any{"type": "output_text", "text": st.arg, "annotations": []any{}}}}
}

func writeResponses(w http.ResponseWriter, n int, st llmStep, tools map[string]string) {
	w.Header().Set("Content-Type", "text/event-stream")
	id := fmt.Sprintf("resp_%03d", n)
	var b bytes.Buffer
	seq := 0
	ev := func(typ string, fields map[string]any) {
		fields["type"] = typ
		fields["sequence_number"] = seq
		seq++
		fmt.Fprintf(&b, "event: %s\ndata: %s\n\n", typ, mustJSON(fields))
	}
	resp := map[string]any{"id": id, "object": "response", "created_at": time.Now().Unix(), "status": "in_progress", "model": "mock", "output": []any{}}
	ev("response.created", map[string]any{"response": resp})
	item := responsesItem(n, st, tools)
	ev("response.output_item.added", map[string]any{"output_index": 0, "item": item})
	if st.kind == "final" {
		ev("response.output_text.delta", map[string]any{"item_id": item["id"], "output_index": 0, "content_index": 0, "delta": st.arg})
	}
	ev("response.output_item.done", map[string]any{"output_index": 0, "item": item})
	done := map[string]any{"id": id, "object": "response", "created_at": time.Now().Unix(), "status": "completed", "model": "mock",
		"output": []any{item},
		"usage": map[string]any{"input_tokens": 1, "input_tokens_details": map[string]int{"cached_tokens": 0},
			"output_tokens": 1, "output_tokens_details": map[string]int{"reasoning_tokens": 0}, "total_tokens": 2}}
	ev("response.completed", map[string]any{"response": done})
	w.Write(b.Bytes())
}
