/**
 * Text buttons for react-jsonschema-form's arrays: its default theme draws them as Bootstrap
 * glyph icons, which render empty without Bootstrap's font; a word reads the same for everyone.
 */
import type { IconButtonProps, TemplatesType } from "@rjsf/utils";

function textButton(label: string, danger = false) {
  return function TextButton(props: IconButtonProps) {
    // RJSF passes its own context (registry, uiSchema, icon…) along with the button attributes.
    const { icon: _icon, iconType: _iconType, uiSchema: _uiSchema, registry: _registry, className: _className, title, ...button } = props;
    return (
      <button type="button" {...button} className={danger ? "secondary danger-text" : "secondary"} title={title}>
        {label}
      </button>
    );
  };
}

/** The console's buttons for array items and additional properties. */
export const formButtons: Partial<TemplatesType["ButtonTemplates"]> = {
  AddButton: textButton("Add item"),
  RemoveButton: textButton("Remove", true),
  MoveUpButton: textButton("Move up"),
  MoveDownButton: textButton("Move down"),
  CopyButton: textButton("Copy"),
  ClearButton: textButton("Clear"),
};
