// Keyboard use of a data grid with one tab stop (the WAI-ARIA grid pattern): arrow keys move, Home
// and End jump to a row's ends (with Ctrl, the grid's), Enter or Space activates the cell. The
// report's matrix and the history's grid both use it. Cells carry their place as data-row and
// data-col; a null is a place without a focusable cell.
export type Grid = (HTMLElement | null)[][];

export function gridKeydown(ev: KeyboardEvent, grid: Grid, activate: (cell: HTMLElement) => void): void {
  const cell = (ev.target as HTMLElement).closest<HTMLElement>('[data-row][data-col]');
  if (!cell) return;
  const row = Number(cell.dataset.row);
  const col = Number(cell.dataset.col);
  const lastRow = grid.length - 1;
  const lastCol = (grid[0]?.length ?? 1) - 1;
  let target: [number, number] | undefined;
  switch (ev.key) {
    case 'ArrowUp':
      target = [Math.max(0, row - 1), col];
      break;
    case 'ArrowDown':
      target = [Math.min(lastRow, row + 1), col];
      break;
    case 'ArrowLeft':
      target = [row, Math.max(0, col - 1)];
      break;
    case 'ArrowRight':
      target = [row, Math.min(lastCol, col + 1)];
      break;
    case 'Home':
      target = ev.ctrlKey ? [0, 0] : [row, 0];
      break;
    case 'End':
      target = ev.ctrlKey ? [lastRow, lastCol] : [row, lastCol];
      break;
    case 'Enter':
    case ' ':
      ev.preventDefault();
      activate(cell);
      return;
    default:
      return;
  }
  ev.preventDefault();
  const next = grid[target[0]]?.[target[1]];
  if (!next) return;
  for (const r of grid) for (const c of r) if (c) c.tabIndex = -1;
  next.tabIndex = 0;
  next.focus();
}
