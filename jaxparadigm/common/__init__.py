"""What every wing needs: number checks, bounded reading, value quoting, progress, a lock."""
