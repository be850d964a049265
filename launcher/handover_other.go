//go:build !linux

package launcher

import "grok-sandbox/argv"

func viaArgsFD(l argv.Launch) ([]string, error) { return l.Argv(), nil }

func handOver(target int, data []byte) error { return nil }

func handOverInit(target int) (string, error) { return "", nil }

func handOverEventLog(target int, grokHome string) error { return nil }

func closeInherited() error { return nil }

func shieldFromTerminalSignals() error { return nil }

func handOverFuse(target int) error { return nil }

// FuseStatus: the mask observer is Linux's.
func FuseStatus() (bool, string) { return false, "the mask observer runs on Linux only" }
