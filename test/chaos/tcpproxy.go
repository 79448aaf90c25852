package main

import (
	"net"
	"sync"
)

// tcpProxy forwards TCP connections to target until it is blackholed
// (T12): from then on every byte either way is read and dropped and new
// connections are accepted but never dialled, so the client's requests
// hang as behind a dead network, not fail fast. Healing closes every
// connection that lost bytes (their streams are broken) and forwards new
// ones again.
type tcpProxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	black bool
	conns map[net.Conn]bool // client side → lost bytes while blackholed
}

func newTCPProxy(target string) (*tcpProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &tcpProxy{ln: ln, target: target, conns: map[net.Conn]bool{}}
	go p.accept()
	return p, nil
}

func (p *tcpProxy) addr() string { return p.ln.Addr().String() }

func (p *tcpProxy) close() {
	_ = p.ln.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		_ = c.Close()
	}
}

// setBlackhole cuts (true) or heals (false) the link.
func (p *tcpProxy) setBlackhole(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.black = on
	if on {
		for c := range p.conns {
			p.conns[c] = true
		}
		return
	}
	for c, lost := range p.conns {
		if lost {
			_ = c.Close()
			delete(p.conns, c)
		}
	}
}

func (p *tcpProxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		black := p.black
		p.conns[c] = black
		p.mu.Unlock()
		if black {
			go p.pump(c, nil) // hold it, drop what it sends
			continue
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = c.Close()
			continue
		}
		go p.pump(c, up)
		go p.pump(up, c)
	}
}

// pump copies src to dst (nil: nowhere) while the link is up, dropping
// bytes while it is blackholed.
func (p *tcpProxy) pump(src, dst net.Conn) {
	buf := make([]byte, 32<<10)
	defer func() {
		_ = src.Close()
		if dst != nil {
			_ = dst.Close()
		}
	}()
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			black := p.black
			p.mu.Unlock()
			if !black && dst != nil {
				if _, werr := dst.Write(buf[:n]); werr != nil {
					return
				}
			}
		}
		if err != nil {
			return
		}
	}
}
