package mcp

// Remove stops a connector and forgets it, so it is no longer listed (a
// deactivated or disabled connector, unlike a stopped one).
func (m *Manager) Remove(name string) {
	m.mu.Lock()
	s := m.sessions[name]
	delete(m.sessions, name)
	m.mu.Unlock()
	if s != nil {
		s.stop()
	}
}
