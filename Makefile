# make check: everything CI checks before the README's test command.
# Pure packages (no kernel, no exec) also run under the race detector.

STATICCHECK = honnef.co/go/tools/cmd/staticcheck@v0.8.2
PURE = ./argv ./globexpand ./launcher/policy ./launcher/printable ./launcher/seccomp ./launcher/envpolicy ./sbpl

.PHONY: check fmt vet staticcheck race darwin test

check: fmt vet staticcheck race darwin

fmt:
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

# arm64 too: vet type-checks the tests, and the seccomp tables and their
# tests name syscalls that only some architectures have.
vet:
	go vet ./...
	GOOS=darwin go vet ./...
	GOARCH=arm64 go vet ./...

# Installed for the host into .tools, then run for each target.
TOOLS = $(CURDIR)/.tools

$(TOOLS)/staticcheck:
	GOBIN=$(TOOLS) go install $(STATICCHECK)

staticcheck: $(TOOLS)/staticcheck
	$(TOOLS)/staticcheck ./...
	GOOS=darwin $(TOOLS)/staticcheck ./...

race:
	go test -race -count=1 $(PURE)

# The darwin build and every package's tests compile for macOS.
darwin:
	GOOS=darwin go build ./...
	for pkg in $$(go list ./...); do GOOS=darwin go test -c -o /dev/null $$pkg >/dev/null || exit 1; done

test:
	go test ./...
