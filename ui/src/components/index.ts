/** The screens' shared parts, one idea a file. */
export { PERMISSIONS, type Permission } from '../../../src/resources/permissions.js';
export { AskButton, AskForm, ConfirmDialog, useConfirm, type ConfirmRequest } from './confirm';
export { actionsColumn, DataTable, linkColumn, type Column, type DataTableProps } from './data-table';
export { ErrorText, Tag } from './feedback';
export { optionsOf, SelectField, SubmitButton, TextField, ToolbarForm, type TextFieldProps } from './fields';
export { useLoad, type Loaded } from './load';
export { PagedTable, SearchTable, usePagedSearch, type PagedSearch } from './paged-table';
export { Pager, usePages, type Pages } from './pager';
export { useRun } from './run';
export { SearchBox } from './search-box';
export { Secret } from './secret';
