// A table of rows, one column a value each: on a phone each row becomes a card, each value labelled
// by its column (console.css), and a "—" value is left out of the card.
export type Column<T> = { head: string; cell: (row: T) => string };

export function Table<T>({ columns, rows, rowData, className }: { columns: Column<T>[]; rows: readonly T[]; rowData: (row: T) => Record<string, string>; className?: string }) {
  return (
    <div class="table">
      <table class={className}>
        <thead>
          <tr>
            {columns.map((column) => (
              <th key={column.head} scope="col">
                {column.head}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {rows.map((row) => {
            const data = rowData(row);
            return (
              <tr key={Object.values(data).join(':')} {...data}>
                {columns.map((column) => {
                  const text = column.cell(row);
                  return (
                    <td key={column.head} data-label={column.head} class={text === '—' ? 'none' : undefined}>
                      {text}
                    </td>
                  );
                })}
              </tr>
            );
          })}
        </tbody>
      </table>
    </div>
  );
}
