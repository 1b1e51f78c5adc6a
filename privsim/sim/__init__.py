"""The simulation engine: named random streams, agents, the message bus, faults, trace."""
